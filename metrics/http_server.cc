#include "metrics/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>

#include "base/deadline.h"
#include "base/thread_name.h"

namespace fabps::metrics {
namespace {

const HttpRoute* FindRoute(const std::vector<HttpRoute>& routes,
                           const std::string& path) {
  for (const HttpRoute& r : routes) {
    if (r.prefix ? path.compare(0, r.path.size(), r.path) == 0 : path == r.path)
      return &r;
  }
  return nullptr;
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Start(
    const HttpServerOptions& options, std::vector<HttpRoute> routes) {
  if (options.threads < 1 || options.timeout_ms < 1)
    return Status::InvalidArgument(options.name +
                                   ": threads and timeout_ms must be positive");
  for (const HttpRoute& r : routes) {
    if (r.path.empty() || r.path[0] != '/' || !r.handler)
      return Status::InvalidArgument(options.name + ": route '" + r.path +
                                     "' needs a path from / and a handler");
  }
  std::unique_ptr<HttpServer> s(new HttpServer());
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
  srv.set_default_headers(
      {{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}});
  // httplib's default adds SO_REUSEPORT, which would let a second process
  // bind the same port and take half the requests: only SO_REUSEADDR.
  srv.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // One handler for every GET: the routes are matched here, exactly or by
  // prefix, not as httplib's regular expressions.
  srv.Get(".*", [routes = std::move(routes)](const httplib::Request& req,
                                             httplib::Response& res) {
    const HttpRoute* r = FindRoute(routes, req.path);
    if (r == nullptr) {
      res.status = 404;
      res.set_content("not found\n", "text/plain; charset=utf-8");
      return;
    }
    HttpReply reply = r->handler(req.path);
    res.status = reply.status;
    res.set_content(std::move(reply.body), reply.content_type.c_str());
  });
  auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
  };
  srv.Post(".*", not_allowed);
  srv.Put(".*", not_allowed);
  srv.Delete(".*", not_allowed);
  srv.Patch(".*", not_allowed);
  srv.Options(".*", not_allowed);
  int port =
      options.port == 0
          ? srv.bind_to_any_port(options.host)
          : (srv.bind_to_port(options.host, options.port) ? options.port : -1);
  if (port <= 0) {
    return Status::Unavailable(options.name + ": cannot bind " + options.host +
                               ":" + std::to_string(options.port));
  }
  s->port_ = port;
  s->thread_ = std::thread([&srv] {
    SetThreadName("fabps-metrics");
    srv.listen_after_bind();
  });
  // stop() is a no-op until the accept loop runs: wait for it, so the
  // destructor always ends the loop.
  Deadline ready = Deadline::InMs(10'000);
  while (!srv.is_running()) {
    if (ready.Expired())
      return Status::Unavailable(options.name + ": accept loop did not start");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return s;
}

HttpServer::~HttpServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace fabps::metrics
