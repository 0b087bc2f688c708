// TLS for the control plane (OpenSSL), optional: a job turns it on by giving
// its processes certificate files, through a daemon's --tls-cert, --tls-key
// and --tls-ca flags (thrift/rpc_flags.h), RpcServerOptions::tls and
// RpcClientOptions::tls, or the environment: $FABPS_TLS_CERT, $FABPS_TLS_KEY
// and $FABPS_TLS_CA (read once per process; explicit options win).
//
// What each side checks:
//  - A server needs a certificate and its key. With a CA file as well it
//    asks every client for a certificate signed by that CA and refuses a
//    client without one (mutual TLS).
//  - A client needs the CA file: the server's certificate must chain to it
//    and name the host the client dialled (a DNS name, or the IP address
//    for a numeric host). It presents its own certificate and key when
//    given both.
//  - TLS 1.2 at least; no renegotiation.
// Files are read when a context is made: a server's at Start(), a client's
// at each connect, so that renewed certificates are picked up by new
// connections.
//
// The job token (thrift/job_token.h) still goes on top: TLS keeps strangers
// from reading or changing the traffic, the token from calling.
//
// Process-wide effect: making a context ignores SIGPIPE (OpenSSL writes to
// the socket with write(), and a peer that went away must be an error, not
// the end of the process).
#ifndef FABPS_THRIFT_TLS_H_
#define FABPS_THRIFT_TLS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace fabps::rpc {

struct TlsOptions {
  std::string cert_file;  // this process's certificate (chain), PEM
  std::string key_file;   // its private key, PEM
  std::string ca_file;    // the CA certificate(s) the peers' chain to, PEM
  bool enabled() const {
    return !cert_file.empty() || !key_file.empty() || !ca_file.empty();
  }
};

// The environment's TLS files as above; all empty when none is set.
const TlsOptions& EnvironmentTls();

// An OpenSSL context made from TlsOptions for one side.
class TlsContext {
 public:
  // InvalidArgument naming what is missing (a server without cert or key, a
  // client without a CA file, a key without its cert); IOError naming the
  // file that cannot be read or does not hold what it should (a key that
  // does not match the certificate, say).
  static Result<std::shared_ptr<TlsContext>> ForServer(const TlsOptions& o);
  static Result<std::shared_ptr<TlsContext>> ForClient(const TlsOptions& o);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  bool server() const { return server_; }
  SSL_CTX* ctx() const { return ctx_; }

 private:
  TlsContext(SSL_CTX* ctx, bool server) : ctx_(ctx), server_(server) {}
  // Takes ctx; frees it and returns s when s is an error.
  static Result<std::shared_ptr<TlsContext>> Wrap(SSL_CTX* ctx, const Status& s,
                                                  bool server);
  SSL_CTX* ctx_;
  bool server_;
};

// One TLS connection over a connected socket it does not own. Not thread
// safe. The handshake runs inside the first Read/Write (or Handshake()).
class TlsSession {
 public:
  enum class Io {
    kOk,         // *n bytes moved (or the handshake finished)
    kWantRead,   // try again when the socket is readable
    kWantWrite,  // try again when the socket is writable
    kClosed,     // the peer closed the connection
    kError,      // TLS failed: error() says why
  };

  // `host` (client side only) is the name or address the certificate must
  // bear. Null when OpenSSL cannot make the session (error in *why).
  static std::unique_ptr<TlsSession> Make(const TlsContext& context, int fd,
                                          const std::string& host,
                                          std::string* why);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  Io Handshake();
  // Client side, after Handshake(): with TLS 1.3 a server that asked for a
  // client certificate judges it only after the client's handshake is done,
  // and answers with session tickets (accepted) or an alert (refused). kOk
  // once accepted or when there is nothing to wait for, kWantRead while no
  // answer came, kError (refused()) on the alert.
  Io Verdict();
  Io Read(uint8_t* buf, uint32_t len, uint32_t* n);
  Io Write(const uint8_t* buf, uint32_t len, uint32_t* n);
  // Decrypted bytes waiting inside the session (the socket may be empty).
  size_t Pending() const;
  // Sends close_notify once if the socket takes it; never waits.
  void Shutdown();

  bool handshake_done() const { return handshake_done_; }
  // Why the last kError happened: OpenSSL's reason, and the certificate
  // check's when that failed.
  const std::string& error() const { return error_; }
  // True when the last kError was the peer's certificate or TLS itself
  // (wrong CA, wrong name, no certificate, not TLS at all), false when the
  // connection broke (reset, closed mid-handshake).
  bool refused() const { return refused_; }

 private:
  explicit TlsSession(SSL* ssl) : ssl_(ssl) {}
  Io Classify(int rc, const char* op, bool writing);
  // Read or Write: the handshake first, then op(len) as SSL_read/SSL_write.
  Io Transfer(bool writing, uint32_t len, uint32_t* n,
              const std::function<int(int)>& op);

  SSL* ssl_;
  bool handshake_done_ = false;
  bool verdict_ = false;
  bool refused_ = false;
  std::string error_;
};

}  // namespace fabps::rpc

#endif  // FABPS_THRIFT_TLS_H_
