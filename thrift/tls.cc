#include "thrift/tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>

namespace fabps::rpc {
namespace {

// OpenSSL's error queue of this thread as one line (and emptied).
std::string DrainErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    // "error:0A000086:SSL routines::certificate verify failed" -> the part
    // after the last ':' is the reason; keep the library for context.
    out += buf;
  }
  return out;
}

// The file must exist and be readable: OpenSSL's own message for a missing
// file is a bare "system library" error.
Status Readable(const std::string& path, const char* what) {
  std::ifstream f(path);
  if (!f) {
    return Status::IOError(std::string("TLS ") + what + " file '" + path +
                           "' cannot be read: " + std::strerror(errno));
  }
  return Status::OK();
}

void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    if (::sigaction(SIGPIPE, nullptr, &sa) == 0 && sa.sa_handler == SIG_DFL) {
      ::signal(SIGPIPE, SIG_IGN);
    }
  });
}

Result<SSL_CTX*> NewContext(bool server) {
  IgnoreSigpipe();
  ERR_clear_error();
  SSL_CTX* ctx =
      SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) return Status::IOError("SSL_CTX_new: " + DrainErrors());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  // The server's sockets are non-blocking and Thrift may offer a different
  // buffer on a retried write.
  SSL_CTX_set_mode(
      ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return ctx;
}

Status LoadIdentity(SSL_CTX* ctx, const TlsOptions& o) {
  Status s = Readable(o.cert_file, "certificate");
  if (s.ok()) s = Readable(o.key_file, "key");
  if (!s.ok()) return s;
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx, o.cert_file.c_str()) != 1) {
    return Status::IOError(
        "TLS certificate file '" + o.cert_file +
        "' holds no usable PEM certificate: " + DrainErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) !=
          1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    return Status::IOError("TLS key file '" + o.key_file +
                           "' holds no PEM private key that matches the "
                           "certificate '" +
                           o.cert_file + "': " + DrainErrors());
  }
  return Status::OK();
}

Status LoadCa(SSL_CTX* ctx, const TlsOptions& o) {
  Status s = Readable(o.ca_file, "CA");
  if (!s.ok()) return s;
  ERR_clear_error();
  if (SSL_CTX_load_verify_locations(ctx, o.ca_file.c_str(), nullptr) != 1) {
    return Status::IOError(
        "TLS CA file '" + o.ca_file +
        "' holds no usable PEM certificate: " + DrainErrors());
  }
  return Status::OK();
}
}  // namespace

const TlsOptions& EnvironmentTls() {
  static const TlsOptions* env = [] {
    auto* o = new TlsOptions();
    auto get = [](const char* name) {
      const char* v = std::getenv(name);
      return v != nullptr ? std::string(v) : std::string();
    };
    o->cert_file = get("FABPS_TLS_CERT");
    o->key_file = get("FABPS_TLS_KEY");
    o->ca_file = get("FABPS_TLS_CA");
    return o;
  }();
  return *env;
}

Result<std::shared_ptr<TlsContext>> TlsContext::Wrap(SSL_CTX* ctx,
                                                     const Status& s,
                                                     bool server) {
  if (!s.ok()) {
    SSL_CTX_free(ctx);
    return s;
  }
  return std::shared_ptr<TlsContext>(new TlsContext(ctx, server));
}

Result<std::shared_ptr<TlsContext>> TlsContext::ForServer(const TlsOptions& o) {
  if (o.cert_file.empty() || o.key_file.empty()) {
    return Status::InvalidArgument(
        "a TLS server needs a certificate and its key (--tls-cert and "
        "--tls-key, or $FABPS_TLS_CERT and $FABPS_TLS_KEY)");
  }
  auto ctx = NewContext(/*server=*/true);
  if (!ctx.ok()) return ctx.status();
  Status s = LoadIdentity(*ctx, o);
  if (s.ok() && !o.ca_file.empty()) {
    s = LoadCa(*ctx, o);
    if (s.ok()) {
      // Mutual TLS: clients must show a certificate of this CA.
      STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.ca_file.c_str());
      if (names != nullptr) SSL_CTX_set_client_CA_list(*ctx, names);
      SSL_CTX_set_verify(
          *ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
  }
  return Wrap(*ctx, s, /*server=*/true);
}

Result<std::shared_ptr<TlsContext>> TlsContext::ForClient(const TlsOptions& o) {
  if (o.ca_file.empty()) {
    return Status::InvalidArgument(
        "a TLS client needs the CA file that signs the servers' certificates "
        "($FABPS_TLS_CA)");
  }
  if (o.cert_file.empty() != o.key_file.empty()) {
    return Status::InvalidArgument(
        "a TLS client certificate needs its key and a key its certificate "
        "($FABPS_TLS_CERT and $FABPS_TLS_KEY)");
  }
  auto ctx = NewContext(/*server=*/false);
  if (!ctx.ok()) return ctx.status();
  Status s = LoadCa(*ctx, o);
  if (s.ok() && !o.cert_file.empty()) s = LoadIdentity(*ctx, o);
  if (s.ok()) SSL_CTX_set_verify(*ctx, SSL_VERIFY_PEER, nullptr);
  return Wrap(*ctx, s, /*server=*/false);
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

std::unique_ptr<TlsSession> TlsSession::Make(const TlsContext& context, int fd,
                                             const std::string& host,
                                             std::string* why) {
  ERR_clear_error();
  SSL* ssl = SSL_new(context.ctx());
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    *why = "SSL_new: " + DrainErrors();
    SSL_free(ssl);
    return nullptr;
  }
  if (context.server()) {
    SSL_set_accept_state(ssl);
  } else {
    SSL_set_connect_state(ssl);
    // The certificate must name the host dialled: as an IP address when
    // the host is numeric, else as a DNS name (also sent as SNI).
    in6_addr any;
    bool numeric = ::inet_pton(AF_INET, host.c_str(), &any) == 1 ||
                   ::inet_pton(AF_INET6, host.c_str(), &any) == 1;
    int ok = numeric ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
                                                     host.c_str())
                     : SSL_set1_host(ssl, host.c_str());
    if (!numeric && ok == 1) SSL_set_tlsext_host_name(ssl, host.c_str());
    if (ok != 1) {
      *why = "TLS: cannot check certificates against host '" + host +
             "': " + DrainErrors();
      SSL_free(ssl);
      return nullptr;
    }
  }
  return std::unique_ptr<TlsSession>(new TlsSession(ssl));
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

TlsSession::Io TlsSession::Classify(int rc, const char* op, bool writing) {
  int err = SSL_get_error(ssl_, rc);
  int errno_copy = errno;
  switch (err) {
    case SSL_ERROR_WANT_READ:
      return Io::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return Io::kWantWrite;
    case SSL_ERROR_ZERO_RETURN:
      return Io::kClosed;
    case SSL_ERROR_SYSCALL:
      ERR_clear_error();
      if (errno_copy == EAGAIN || errno_copy == EWOULDBLOCK ||
          errno_copy == EINTR) {
        return writing ? Io::kWantWrite : Io::kWantRead;
      }
      if (errno_copy == 0) return Io::kClosed;  // EOF without close_notify
      refused_ = false;
      error_ = std::string(op) + ": " + std::strerror(errno_copy);
      return Io::kError;
    default: {
      std::string reasons = DrainErrors();
      // A peer that hangs up mid-handshake is a broken connection, not a
      // refusal.
      refused_ = reasons.find("unexpected eof") == std::string::npos;
      error_ = std::string(op) + ": " + reasons;
      long verify = SSL_get_verify_result(ssl_);
      if (verify != X509_V_OK) {
        error_ += std::string(" (certificate: ") +
                  X509_verify_cert_error_string(verify) + ")";
      }
      return Io::kError;
    }
  }
}

TlsSession::Io TlsSession::Handshake() {
  if (handshake_done_) return Io::kOk;
  ERR_clear_error();
  errno = 0;
  int rc = SSL_do_handshake(ssl_);
  if (rc == 1) {
    handshake_done_ = true;
    return Io::kOk;
  }
  Io io = Classify(rc, "TLS handshake", false);
  if (io == Io::kClosed) {
    refused_ = false;
    error_ = "TLS handshake: the peer closed the connection";
    return Io::kError;
  }
  return io;
}

TlsSession::Io TlsSession::Verdict() {
  if (verdict_) return Io::kOk;
  STACK_OF(X509_NAME)* asked = SSL_get_client_CA_list(ssl_);
  if (SSL_version(ssl_) != TLS1_3_VERSION || asked == nullptr ||
      sk_X509_NAME_num(asked) == 0 ||
      SSL_SESSION_has_ticket(SSL_get0_session(ssl_))) {
    verdict_ = true;
    return Io::kOk;
  }
  uint8_t byte;
  ERR_clear_error();
  errno = 0;
  int rc = SSL_peek(ssl_, &byte, 1);
  Io io = rc > 0 ? Io::kOk : Classify(rc, "TLS handshake", false);
  if (io == Io::kWantRead && !SSL_SESSION_has_ticket(SSL_get0_session(ssl_))) {
    return Io::kWantRead;
  }
  if (io == Io::kClosed) {
    refused_ = true;
    error_ =
        "TLS handshake: the server closed the connection (this "
        "process's certificate refused?)";
    return Io::kError;
  }
  if (io == Io::kError) return io;
  verdict_ = true;
  return Io::kOk;
}

TlsSession::Io TlsSession::Read(uint8_t* buf, uint32_t len, uint32_t* n) {
  return Transfer(false, len, n, [&](int l) { return SSL_read(ssl_, buf, l); });
}

TlsSession::Io TlsSession::Write(const uint8_t* buf, uint32_t len,
                                 uint32_t* n) {
  return Transfer(true, len, n, [&](int l) { return SSL_write(ssl_, buf, l); });
}

TlsSession::Io TlsSession::Transfer(bool writing, uint32_t len, uint32_t* n,
                                    const std::function<int(int)>& op) {
  *n = 0;
  Io io = Handshake();
  if (io != Io::kOk || len == 0) return io;
  ERR_clear_error();
  errno = 0;
  int rc = op(static_cast<int>(
      std::min<uint32_t>(len, static_cast<uint32_t>(INT32_MAX))));
  if (rc > 0) {
    *n = static_cast<uint32_t>(rc);
    return Io::kOk;
  }
  return Classify(rc, writing ? "TLS write" : "TLS read", writing);
}

size_t TlsSession::Pending() const {
  return static_cast<size_t>(std::max(0, SSL_pending(ssl_)));
}

void TlsSession::Shutdown() {
  if (!handshake_done_) return;
  ERR_clear_error();
  SSL_shutdown(ssl_);
  ERR_clear_error();
}

}  // namespace fabps::rpc
