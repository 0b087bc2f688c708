// RpcServer: a Thrift TNonblockingServer for one service, as every fabps
// daemon runs it.
//
// Wire: TFramedTransport + TBinaryProtocol (clients: thrift/rpc_client.h).
// Threads: `io_threads` libevent loops read and write frames; complete
// requests run on a bounded pool of `worker_threads` (Thrift ThreadManager)
// with at most `max_queued_requests` waiting. Frames larger than
// `max_frame_bytes` close the connection; string and container sizes inside
// a request are bounded by the frame, so a bad peer cannot make the server
// allocate without limit, and a request that fails to parse only drops that
// connection.
//
// Lifetime: Start() returns once the socket listens (port 0 picks a free
// port; port() reports it). Stop() (any thread, idempotent) ends the event
// loops and waits for them; the destructor calls it. The processor and its
// handler must stay alive until Stop() returns. Handlers run on worker
// threads concurrently and must be thread safe.
#ifndef FABPS_THRIFT_RPC_SERVER_H_
#define FABPS_THRIFT_RPC_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"

namespace apache::thrift {
class TProcessor;
namespace server {
class TNonblockingServer;
}
}  // namespace apache::thrift

namespace fabps::rpc {

struct RpcServerOptions {
  std::string host = "127.0.0.1";  // "0.0.0.0" for every interface
  int port = 0;                    // 0: any free port
  int io_threads = 1;
  int worker_threads = 4;
  size_t max_queued_requests = 4096;
  size_t max_frame_bytes = 16 << 20;
  int64_t start_timeout_ms = 10'000;
};

class RpcServer {
 public:
  // Binds and listens, then serves on background threads. InvalidArgument
  // for options out of range; Unavailable when the address cannot be bound;
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

  void Stop();

 private:
  RpcServer() = default;

  std::string host_;
  int port_ = 0;
  std::shared_ptr<apache::thrift::server::TNonblockingServer> server_;
  std::thread serve_thread_;
  std::mutex stop_mu_;
  bool stopped_ = false;
};

}  // namespace fabps::rpc

#endif  // FABPS_THRIFT_RPC_SERVER_H_
