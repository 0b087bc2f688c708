// RpcServer: a Thrift TNonblockingServer for one service, as every fabps
// daemon runs it.
//
// Wire: TFramedTransport + TBinaryProtocol, strict (versioned) messages only
// (clients: thrift/rpc_client.h). Threads: `io_threads` libevent loops read
// and write frames; complete requests run on a bounded pool of
// `worker_threads` (Thrift ThreadManager) with at most `max_queued_requests`
// waiting.
//
// What a bad peer meets (every byte from outside is checked before use):
//  - A frame longer than `max_frame_bytes` (or a length prefix like
//    0x7fffffff) closes the connection before anything is allocated for it,
//    and so does an empty frame (length 0), which cannot hold a call.
//  - Request frames being read at once may hold at most
//    `max_pending_request_bytes` together; a frame that would pass it closes
//    its connection.
//  - String and container lengths inside a request are bounded by the bytes
//    left in its frame, so a lying length field allocates at most a small
//    multiple of the frame.
//  - A request that fails to decode, or a message that is not a call, is
//    answered with a TApplicationException (PROTOCOL_ERROR or
//    INVALID_MESSAGE_TYPE) and the connection is closed after that reply. An
//    unknown method name is answered with UNKNOWN_METHOD and the connection
//    stays usable.
//  - A request frame must arrive whole, and a reply must be taken whole by
//    the peer, within `frame_timeout_ms` of its first byte (slow senders,
//    slow readers); a new connection must start its first request within
//    `first_request_timeout_ms`; a connection between requests is closed
//    after `idle_timeout_ms` (0: never). A connection whose request is being
//    served is never timed out.
//  - At most `max_connections` connections are kept: a new one evicts the
//    connection idle the longest (one that never sent a request first), or
//    is closed at once when every connection is busy. Running out of file
//    descriptors closes new connections instead of stopping the server.
//  - With TLS (options.tls or $FABPS_TLS_*), a failed handshake (not TLS,
//    a client certificate missing or not of the CA) closes the connection
//    and is logged; a handshake that stalls counts against
//    `first_request_timeout_ms`. Calls must not be pipelined over TLS: a
//    request that arrives with the one before it is not served, the
//    connection closes after the earlier one's reply.
// Closing a connection affects no other; the client sees the close (or the
// error reply) and RpcConnection reconnects on its next call.
//
// Lifetime: Start() returns once the socket listens (port 0 picks a free
// port; port() reports it). Stop() (any thread, idempotent) ends the event
// loops and waits for them; the destructor calls it. The processor and its
// handler must stay alive until Stop() returns. Handlers run on worker
// threads concurrently and must be thread safe.
//
// Process-wide effect: Start() raises the soft RLIMIT_NOFILE (up to the hard
// limit) so that `max_connections` sockets fit beside the process's other
// files.
#ifndef FABPS_THRIFT_RPC_SERVER_H_
#define FABPS_THRIFT_RPC_SERVER_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "thrift/tls.h"

namespace apache::thrift {
class TProcessor;
namespace server {
class TNonblockingServer;
}
}  // namespace apache::thrift

namespace fabps::rpc::internal {
class ConnectionGuard;
}

namespace fabps::rpc {

struct RpcServerOptions {
  std::string host = "127.0.0.1";  // "0.0.0.0" for every interface
  int port = 0;                    // 0: any free port
  int io_threads = 1;
  int worker_threads = 4;
  size_t max_queued_requests = 4096;
  // Largest request frame, in [1 KiB, 1 GiB].
  size_t max_frame_bytes = 16 << 20;
  // Request bytes all connections may have announced and not yet been
  // answered for, together; at least max_frame_bytes. 0: 4 * max_frame_bytes
  // but at least 256 MiB.
  size_t max_pending_request_bytes = 0;
  // Connections kept open at once, in [1, 1 << 20].
  size_t max_connections = 1024;
  // Timeouts in ms as described above; each in [0, 1 day], 0 turns it off.
  // frame_timeout_ms bounds a whole frame, so lower it only with the largest
  // frame and the slowest link in mind (16 MiB in 10 s is 1.6 MB/s).
  int64_t frame_timeout_ms = 10'000;
  int64_t first_request_timeout_ms = 10'000;
  // Off by default: clients keep connections between rare calls (a trainer's
  // SaveModel) and not all of them retry a call on a closed connection.
  // Idle connections are evicted anyway once max_connections is reached.
  int64_t idle_timeout_ms = 0;
  int64_t start_timeout_ms = 10'000;
  // The job token connections must present (thrift/job_token.h); "" takes
  // the environment's ($FABPS_JOB_TOKEN_FILE, $FABPS_JOB_TOKEN), and with
  // none there every connection is served.
  std::string token;
  // TLS (thrift/tls.h): certificate and key, and a CA file to require client
  // certificates. None set takes the environment's ($FABPS_TLS_*); none
  // there serves plain TCP.
  TlsOptions tls;
};

// What the server saw since Start(), and what it did to bad peers
// (monotonic counters; accepted - closed connections are open now).
struct RpcServerStats {
  uint64_t accepted = 0;            // connections accepted
  uint64_t closed = 0;              // connections closed (either side)
  uint64_t request_frames = 0;      // request frame headers read
  uint64_t refused = 0;             // closed at accept: full of busy peers,
                                    // or out of file descriptors
  uint64_t evicted = 0;             // idle, closed for a new connection
  uint64_t timed_out = 0;           // frame, first-request or idle timeout
  uint64_t bad_requests = 0;        // answered with an error, then closed
  uint64_t over_pending_bytes = 0;  // frame over max_pending_request_bytes
  uint64_t tls_failures = 0;        // TLS handshake or record failed
  uint64_t bad_frames = 0;          // empty frame (length 0), closed unanswered
  uint64_t pipelined_over_tls = 0;  // closed after a reply: the next request
                                    // came in the same TLS record
};

class RpcServer {
 public:
  // Binds and listens, then serves on background threads. InvalidArgument
  // for options out of range (or TLS files missing); IOError for TLS files
  // that cannot be used; Unavailable when the address cannot be bound;
  // TimedOut when the server did not come up in start_timeout_ms.
  static Result<std::unique_ptr<RpcServer>> Start(
      std::shared_ptr<apache::thrift::TProcessor> processor,
      const RpcServerOptions& options);
  ~RpcServer();
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // The port the server listens on (the chosen one when options.port was 0).
  int port() const { return port_; }
  const std::string& host() const { return host_; }
  // Thread safe; valid until the server is destroyed.
  RpcServerStats stats() const;

  void Stop();

 private:
  RpcServer() = default;

  std::string host_;
  int port_ = 0;
  std::shared_ptr<apache::thrift::server::TNonblockingServer> server_;
  std::shared_ptr<internal::ConnectionGuard> guard_;
  std::thread serve_thread_;
  std::thread reaper_thread_;  // closes timed-out connections
  std::mutex reaper_mu_;
  std::condition_variable reaper_cv_;
  bool reaper_stop_ = false;  // guarded by reaper_mu_
  std::mutex stop_mu_;
  bool stopped_ = false;
};

}  // namespace fabps::rpc

#endif  // FABPS_THRIFT_RPC_SERVER_H_
