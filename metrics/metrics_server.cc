#include "metrics/metrics_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>

#include "base/deadline.h"
#include "metrics/exposition.h"

namespace fabps::metrics {

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const Registry* registry, const MetricsServerOptions& options) {
  if (options.threads < 1 || options.timeout_ms < 1)
    return Status::InvalidArgument(
        "metrics server: threads and timeout_ms "
        "must be positive");
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  s->server_ = std::make_unique<httplib::Server>();
  httplib::Server& srv = *s->server_;
  int threads = options.threads;
  srv.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  time_t sec = options.timeout_ms / 1000;
  time_t usec = (options.timeout_ms % 1000) * 1000;
  srv.set_read_timeout(sec, usec);
  srv.set_write_timeout(sec, usec);
  srv.set_keep_alive_timeout(sec > 0 ? sec : 1);
  srv.set_keep_alive_max_count(100);
  srv.set_payload_max_length(4096);  // a GET has no body
  // httplib's default adds SO_REUSEPORT, which would let a second daemon
  // bind the same port and take half the scrapes: only SO_REUSEADDR.
  srv.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  srv.Get("/metrics",
          [registry](const httplib::Request&, httplib::Response& res) {
            res.set_content(registry->Expose(), kContentType);
          });
  auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
  };
  srv.Post("/metrics", not_allowed);
  srv.Put("/metrics", not_allowed);
  srv.Delete("/metrics", not_allowed);
  srv.Patch("/metrics", not_allowed);
  int port =
      options.port == 0
          ? srv.bind_to_any_port(options.host)
          : (srv.bind_to_port(options.host, options.port) ? options.port : -1);
  if (port <= 0) {
    return Status::Unavailable("metrics server: cannot bind " + options.host +
                               ":" + std::to_string(options.port));
  }
  s->port_ = port;
  s->thread_ = std::thread([&srv] { srv.listen_after_bind(); });
  // stop() is a no-op until the accept loop runs: wait for it, so the
  // destructor always ends the loop.
  Deadline ready = Deadline::InMs(10'000);
  while (!srv.is_running()) {
    if (ready.Expired())
      return Status::Unavailable("metrics server: accept loop did not start");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return s;
}

MetricsServer::~MetricsServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace fabps::metrics
