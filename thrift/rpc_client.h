// Client side of the Thrift control plane: framed binary connections with
// timeouts, Thrift exceptions turned into Status, and retries with backoff.
//
//   rpc::RpcConnection<master::MasterClient> conn(options);
//   int64_t pass = 0;
//   Status s = conn.Call("Status", [&](master::MasterClient& c) {
//     master::MasterStatus st; c.Status(st); pass = st.pass; });
//
// Errors: a TLS refusal (the server's certificate not of the CA or not
// naming the host, the server refusing this client's certificate, one side
// not speaking TLS) becomes kPermissionDenied; a Thrift transport error
// kTimedOut (a send or receive
// timeout: the call may have run) or kUnavailable (connect refused, peer
// closed, not open); a protocol error kCorruption; an application error
// (unknown method, internal error on the peer) kIOError; any other
// exception kIOError. After such an error the connection is closed and the
// next Call reconnects. Service-defined exceptions should be caught inside
// the callback (they are TExceptions too and would become kIOError).
//
// Thread safety: an RpcConnection is used by one thread at a time; use one
// per thread or guard it. RetryWithBackoff is thread safe.
#ifndef FABPS_THRIFT_RPC_CLIENT_H_
#define FABPS_THRIFT_RPC_CLIENT_H_

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "base/deadline.h"
#include "base/status.h"
#include "thrift/tls.h"

namespace apache::thrift {
namespace protocol {
class TProtocol;
}
namespace transport {
class TTransport;
class TSocket;
}  // namespace transport
}  // namespace apache::thrift

namespace fabps::rpc {

struct RpcClientOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  int connect_timeout_ms = 2'000;
  int send_timeout_ms = 10'000;
  int recv_timeout_ms = 10'000;
  size_t max_frame_bytes = 16 << 20;
  // Presented right after connecting (thrift/job_token.h); "" takes the
  // environment's, and with none there nothing is presented.
  std::string token;
  // TLS (thrift/tls.h): the CA file, and a certificate and key when the
  // server asks for one. None set takes the environment's ($FABPS_TLS_*);
  // none there speaks plain TCP.
  TlsOptions tls;
};

// Sends Thrift's own messages (it prints them to stderr by default) to
// FABPS_LOG(DEBUG). Idempotent; RpcServer::Start and OpenFramedChannel call it.
void RouteThriftOutputToLog();

// Parses "host:port" into options.host/port. InvalidArgument otherwise.
Status ParseHostPort(const std::string& address, RpcClientOptions* options);

// Turns an exception thrown by Thrift (or anything else) into a Status whose
// message starts with `context`.
Status ThriftErrorToStatus(const std::exception& e, const std::string& context);
// True when the error leaves the connection unusable (transport, protocol).
bool ThriftErrorBreaksConnection(const std::exception& e);

// An open framed transport and binary protocol, the job token presented.
// Unavailable when the connect fails, TimedOut when it times out,
// PermissionDenied when the server refuses the token or either side's TLS
// certificate is refused; InvalidArgument or IOError for unusable TLS files.
struct FramedChannel {
  std::shared_ptr<apache::thrift::transport::TTransport> transport;
  std::shared_ptr<apache::thrift::protocol::TProtocol> protocol;
  std::shared_ptr<apache::thrift::transport::TSocket> socket;  // under both
};
Result<FramedChannel> OpenFramedChannel(const RpcClientOptions& options);
void CloseChannel(FramedChannel* channel);
// Sets the socket's send and receive timeouts of an open channel.
void SetChannelTimeouts(FramedChannel* channel, int send_ms, int recv_ms);
// `options` with every timeout cut to `left_ms` (at least 1 ms).
RpcClientOptions BoundedTimeouts(RpcClientOptions options, int64_t left_ms);

// A lazily (re)connected client of generated type ClientT (e.g.
// fabps::rpc::master::MasterClient).
template <class ClientT>
class RpcConnection {
 public:
  explicit RpcConnection(RpcClientOptions options)
      : options_(std::move(options)) {}
  ~RpcConnection() { Close(); }
  RpcConnection(const RpcConnection&) = delete;
  RpcConnection& operator=(const RpcConnection&) = delete;

  // Runs fn(client) on an open connection, opening one first if needed.
  template <class Fn>
  Status Call(const std::string& what, Fn&& fn) {
    return Run(what, options_, std::forward<Fn>(fn));
  }
  // The same, with the connect and socket timeouts of this call cut to what
  // is left of `deadline` (TimedOut at once when nothing is left).
  template <class Fn>
  Status Call(const std::string& what, Deadline deadline, Fn&& fn) {
    int64_t left = deadline.RemainingMs();
    if (left <= 0) return Status::TimedOut(what + ": deadline passed");
    RpcClientOptions bounded = BoundedTimeouts(options_, left);
    if (client_ != nullptr) {
      SetChannelTimeouts(&channel_, bounded.send_timeout_ms,
                         bounded.recv_timeout_ms);
    }
    Status s = Run(what, bounded, std::forward<Fn>(fn));
    if (client_ != nullptr) {
      SetChannelTimeouts(&channel_, options_.send_timeout_ms,
                         options_.recv_timeout_ms);
    }
    return s;
  }
  void Close() {
    client_.reset();
    CloseChannel(&channel_);
  }
  const RpcClientOptions& options() const { return options_; }

 private:
  template <class Fn>
  Status Run(const std::string& what, const RpcClientOptions& open_with,
             Fn&& fn) {
    if (client_ == nullptr) {
      auto ch = OpenFramedChannel(open_with);
      if (!ch.ok()) return ch.status().WithContext(what);
      channel_ = std::move(ch).value();
      client_ = std::make_unique<ClientT>(channel_.protocol);
    }
    try {
      fn(*client_);
      return Status::OK();
    } catch (const std::exception& e) {
      if (ThriftErrorBreaksConnection(e)) Close();
      return ThriftErrorToStatus(e, what + " to " + options_.host + ":" +
                                        std::to_string(options_.port));
    }
  }

  RpcClientOptions options_;
  FramedChannel channel_;
  std::unique_ptr<ClientT> client_;
};

struct RetryOptions {
  int max_attempts = 5;
  int64_t initial_backoff_ms = 20;
  int64_t max_backoff_ms = 1'000;
  // No attempt starts after this; a backoff sleep never passes it.
  Deadline deadline = Deadline::InMs(30'000);
};

// True for the codes worth retrying: kUnavailable, kTimedOut.
bool IsRetryable(const Status& s);

// Calls fn until it returns OK or a non-retryable error, or attempts or the
// deadline run out; sleeps between attempts with exponential backoff and
// jitter. Returns the last status. Only for idempotent calls: a timed-out
// attempt may have taken effect.
Status RetryWithBackoff(const RetryOptions& options,
                        const std::function<Status()>& fn);

}  // namespace fabps::rpc

#endif  // FABPS_THRIFT_RPC_CLIENT_H_
