#include "thrift/rpc_server.h"

#include <thrift/TProcessor.h>
#include <thrift/concurrency/ThreadFactory.h>
#include <thrift/concurrency/ThreadManager.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TNonblockingServer.h>
#include <thrift/server/TServer.h>
#include <thrift/transport/TNonblockingServerSocket.h>

#include <chrono>
#include <condition_variable>

#include "base/log.h"
#include "thrift/rpc_client.h"

namespace fabps::rpc {
namespace {

using apache::thrift::concurrency::ThreadFactory;
using apache::thrift::concurrency::ThreadManager;
using apache::thrift::protocol::TBinaryProtocolFactory;
using apache::thrift::server::TNonblockingServer;
using apache::thrift::server::TServerEventHandler;
using apache::thrift::transport::TNonblockingServerSocket;

// Tells Start() when the server listens (or that serve() ended first).
struct StartSignal {
  std::mutex mu;
  std::condition_variable cv;
  bool listening = false;
  bool ended = false;
  std::string error;
};

class ReadyHandler : public TServerEventHandler {
 public:
  explicit ReadyHandler(std::shared_ptr<StartSignal> s) : s_(std::move(s)) {}
  void preServe() override {
    std::lock_guard<std::mutex> l(s_->mu);
    s_->listening = true;
    s_->cv.notify_all();
  }

 private:
  std::shared_ptr<StartSignal> s_;
};

}  // namespace

Result<std::unique_ptr<RpcServer>> RpcServer::Start(
    std::shared_ptr<apache::thrift::TProcessor> processor,
    const RpcServerOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return Status::InvalidArgument("port must be in [0, 65535]");
  }
  if (options.io_threads < 1 || options.io_threads > 64 ||
      options.worker_threads < 1 || options.worker_threads > 1024) {
    return Status::InvalidArgument(
        "io_threads must be in [1, 64], worker_threads in [1, 1024]");
  }
  if (options.max_frame_bytes < 1024 || options.max_frame_bytes > (1u << 30)) {
    return Status::InvalidArgument("max_frame_bytes must be in [1 KiB, 1 GiB]");
  }
  RouteThriftOutputToLog();
  std::unique_ptr<RpcServer> rs(new RpcServer());
  auto signal = std::make_shared<StartSignal>();
  try {
    auto socket =
        std::make_shared<TNonblockingServerSocket>(options.host, options.port);
    auto workers = ThreadManager::newSimpleThreadManager(
        static_cast<size_t>(options.worker_threads),
        options.max_queued_requests);
    workers->threadFactory(std::make_shared<ThreadFactory>());
    workers->start();
    // Bounding strings and containers by the frame size keeps a lying length
    // field from allocating more than a frame.
    auto proto = std::make_shared<TBinaryProtocolFactory>(
        static_cast<int32_t>(options.max_frame_bytes),
        static_cast<int32_t>(options.max_frame_bytes),
        /*strict_read=*/false, /*strict_write=*/true);
    rs->server_ =
        std::make_shared<TNonblockingServer>(processor, proto, socket, workers);
    rs->server_->setNumIOThreads(static_cast<size_t>(options.io_threads));
    rs->server_->setMaxFrameSize(options.max_frame_bytes);
    rs->server_->setServerEventHandler(std::make_shared<ReadyHandler>(signal));
  } catch (const std::exception& e) {
    return Status::Unavailable(std::string("thrift server setup: ") + e.what());
  }
  auto server = rs->server_;
  rs->serve_thread_ = std::thread([server, signal] {
    std::string error;
    try {
      server->serve();
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::lock_guard<std::mutex> l(signal->mu);
    signal->ended = true;
    signal->error = error;
    signal->cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> l(signal->mu);
    signal->cv.wait_for(l, std::chrono::milliseconds(options.start_timeout_ms),
                        [&] { return signal->listening || signal->ended; });
    if (!signal->listening) {
      std::string why = signal->ended ? "thrift server on " + options.host +
                                            ":" + std::to_string(options.port) +
                                            ": " + signal->error
                                      : "thrift server did not start in time";
      bool ended = signal->ended;
      l.unlock();
      if (ended) {
        rs->Stop();
      } else {
        // The event loop may not exist yet, so stop() could not end it:
        // leave the thread (it holds the server) rather than hang joining.
        rs->serve_thread_.detach();
        rs->stopped_ = true;
      }
      return ended ? Status::Unavailable(why) : Status::TimedOut(why);
    }
  }
  rs->host_ = options.host;
  rs->port_ = rs->server_->getListenPort();
  return rs;
}

void RpcServer::Stop() {
  std::lock_guard<std::mutex> l(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  if (server_) server_->stop();
  if (serve_thread_.joinable()) serve_thread_.join();
  server_.reset();
}

RpcServer::~RpcServer() { Stop(); }

}  // namespace fabps::rpc
