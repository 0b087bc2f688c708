// RpcServer (thrift/rpc_server.h): checks the options and puts the pieces
// together: TNonblockingServer listening on a GuardedServerSocket, requests
// through a GuardedProcessor, one ConnectionGuard (thrift/internal/) that
// both report to, and the reaper thread that has the guard close
// connections whose time is up.
#include "thrift/rpc_server.h"

#include <sys/resource.h>
#include <thrift/TProcessor.h>
#include <thrift/concurrency/ThreadFactory.h>
#include <thrift/concurrency/ThreadManager.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TNonblockingServer.h>
#include <thrift/server/TServer.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <thread>

#include "base/log.h"
#include "base/thread_name.h"
#include "thrift/internal/connection_guard.h"
#include "thrift/internal/guarded_processor.h"
#include "thrift/internal/guarded_server_socket.h"
#include "thrift/internal/guarded_socket.h"
#include "thrift/job_token.h"
#include "thrift/rpc_client.h"
#include "thrift/tls.h"

namespace fabps::rpc {
namespace {

using apache::thrift::concurrency::ThreadFactory;
using apache::thrift::concurrency::ThreadManager;
using apache::thrift::protocol::TBinaryProtocolFactory;
using apache::thrift::protocol::TProtocol;
using apache::thrift::server::TNonblockingServer;
using apache::thrift::server::TServerEventHandler;
using apache::thrift::transport::TTransport;

// Tells Start() when the server listens (or that serve() ended first).
struct StartSignal {
  std::mutex mu;
  std::condition_variable cv;
  bool listening = false;
  bool ended = false;
  std::string error;
};

// Start-up signal, and the per-connection context that links a request to
// its connection.
class ServerEvents : public TServerEventHandler {
 public:
  explicit ServerEvents(std::shared_ptr<StartSignal> s) : s_(std::move(s)) {}
  void preServe() override {
    std::lock_guard<std::mutex> l(s_->mu);
    s_->listening = true;
    s_->cv.notify_all();
  }
  void* createContext(std::shared_ptr<TProtocol>,
                      std::shared_ptr<TProtocol>) override {
    return new internal::ConnectionContext();
  }
  void deleteContext(void* ctx, std::shared_ptr<TProtocol>,
                     std::shared_ptr<TProtocol>) override {
    delete static_cast<internal::ConnectionContext*>(ctx);
  }
  void processContext(void* ctx,
                      std::shared_ptr<TTransport> transport) override {
    auto* socket = dynamic_cast<internal::GuardedSocket*>(transport.get());
    static_cast<internal::ConnectionContext*>(ctx)->connection =
        socket != nullptr ? socket->state() : nullptr;
  }

 private:
  std::shared_ptr<StartSignal> s_;
};

constexpr int64_t kMaxTimeoutMs = 86'400'000;
constexpr size_t kIdleBufferLimit = 1 << 20;

// Room for max_connections sockets beside the process's other files.
void RaiseFileLimit(size_t max_connections) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  rlim_t want = static_cast<rlim_t>(max_connections) + 256;
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < want) {
    rlimit raised = r;
    raised.rlim_cur =
        r.rlim_max == RLIM_INFINITY ? want : std::min(want, r.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < want) {
    FABPS_LOG(WARNING) << "rpc server: the file limit (" << r.rlim_cur
                       << ") is below max_connections + 256; connections "
                          "past it are closed at once";
  }
}

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
  if (options.max_connections < 1 || options.max_connections > (1u << 20)) {
    return Status::InvalidArgument("max_connections must be in [1, 2^20]");
  }
  if (options.max_pending_request_bytes != 0 &&
      options.max_pending_request_bytes < options.max_frame_bytes) {
    return Status::InvalidArgument(
        "max_pending_request_bytes must be 0 or at least max_frame_bytes");
  }
  for (int64_t t : {options.frame_timeout_ms, options.first_request_timeout_ms,
                    options.idle_timeout_ms}) {
    if (t < 0 || t > kMaxTimeoutMs) {
      return Status::InvalidArgument(
          "frame, first-request and idle timeouts must be in [0, 1 day] ms");
    }
  }
  if (options.token.size() > kMaxTokenBytes) {
    return Status::InvalidArgument("job token longer than " +
                                   std::to_string(kMaxTokenBytes) + " bytes");
  }
  std::shared_ptr<TlsContext> tls;
  const TlsOptions& tls_files =
      options.tls.enabled() ? options.tls : EnvironmentTls();
  if (tls_files.enabled()) {
    auto made = TlsContext::ForServer(tls_files);
    if (!made.ok()) return made.status();
    tls = std::move(made).value();
  }
  RouteThriftOutputToLog();
  RaiseFileLimit(options.max_connections);
  RpcServerOptions o = options;
  if (o.max_pending_request_bytes == 0) {
    o.max_pending_request_bytes =
        std::max<size_t>(4 * o.max_frame_bytes, size_t{256} << 20);
  }
  std::unique_ptr<RpcServer> rs(new RpcServer());
  rs->guard_ = std::make_shared<internal::ConnectionGuard>(o);
  auto signal = std::make_shared<StartSignal>();
  try {
    auto socket = std::make_shared<internal::GuardedServerSocket>(
        o.host, o.port, o.max_frame_bytes, rs->guard_, tls);
    auto workers = ThreadManager::newSimpleThreadManager(
        static_cast<size_t>(o.worker_threads), o.max_queued_requests);
    workers->threadFactory(std::make_shared<ThreadFactory>());
    workers->start();
    // The frame bounds strings and containers (GuardedProcessor narrows
    // that to each frame); strict_read refuses unversioned messages.
    auto proto = std::make_shared<TBinaryProtocolFactory>(
        static_cast<int32_t>(o.max_frame_bytes),
        static_cast<int32_t>(o.max_frame_bytes),
        /*strict_read=*/true, /*strict_write=*/true);
    auto guarded = std::make_shared<internal::GuardedProcessor>(
        processor, rs->guard_,
        o.token.empty() ? EnvironmentJobToken() : o.token);
    rs->server_ =
        std::make_shared<TNonblockingServer>(guarded, proto, socket, workers);
    rs->server_->setNumIOThreads(static_cast<size_t>(o.io_threads));
    rs->server_->setMaxFrameSize(o.max_frame_bytes);
    // Give big buffers back after each reply rather than every 512.
    rs->server_->setResizeBufferEveryN(1);
    rs->server_->setIdleReadBufferLimit(kIdleBufferLimit);
    rs->server_->setIdleWriteBufferLimit(kIdleBufferLimit);
    rs->server_->setServerEventHandler(std::make_shared<ServerEvents>(signal));
  } catch (const std::exception& e) {
    return Status::Unavailable(std::string("thrift server setup: ") + e.what());
  }
  auto server = rs->server_;
  rs->serve_thread_ = std::thread([server, signal] {
    // Thrift's I/O threads start from here and inherit the name.
    SetThreadName("fabps-rpc");
    std::string error;
    try {
      server->serve();
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!error.empty()) FABPS_LOG(ERROR) << "rpc server stopped: " << error;
    std::lock_guard<std::mutex> l(signal->mu);
    signal->ended = true;
    signal->error = error;
    signal->cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> l(signal->mu);
    signal->cv.wait_for(l, std::chrono::milliseconds(o.start_timeout_ms),
                        [&] { return signal->listening || signal->ended; });
    if (!signal->listening) {
      std::string why = signal->ended
                            ? "thrift server on " + o.host + ":" +
                                  std::to_string(o.port) + ": " + signal->error
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
  // Timeouts are checked a few times per shortest timeout, at most each
  // second and at least every 50 ms.
  int64_t shortest = kMaxTimeoutMs;
  for (int64_t t :
       {o.frame_timeout_ms, o.first_request_timeout_ms, o.idle_timeout_ms}) {
    if (t > 0) shortest = std::min(shortest, t);
  }
  int64_t tick_ms = std::clamp<int64_t>(shortest / 4, 50, 1000);
  rs->reaper_thread_ = std::thread([raw = rs.get(), tick_ms] {
    SetThreadName("fabps-rpc-reap");
    std::unique_lock<std::mutex> l(raw->reaper_mu_);
    while (!raw->reaper_cv_.wait_for(l, std::chrono::milliseconds(tick_ms),
                                     [raw] { return raw->reaper_stop_; })) {
      raw->guard_->Reap();
    }
  });
  rs->host_ = o.host;
  rs->port_ = rs->server_->getListenPort();
  return rs;
}

RpcServerStats RpcServer::stats() const {
  return guard_ ? guard_->stats() : RpcServerStats{};
}

void RpcServer::Stop() {
  std::lock_guard<std::mutex> l(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard<std::mutex> rl(reaper_mu_);
    reaper_stop_ = true;
  }
  reaper_cv_.notify_all();
  if (reaper_thread_.joinable()) reaper_thread_.join();
  if (server_) server_->stop();
  if (serve_thread_.joinable()) serve_thread_.join();
  server_.reset();
}

RpcServer::~RpcServer() { Stop(); }

}  // namespace fabps::rpc
