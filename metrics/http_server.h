// HttpServer: the one HTTP server of fabps, for read-only endpoints (the
// daemons' /metrics, the launcher's status page). It serves GET (and HEAD)
// of the routes it was given and nothing else: another path is 404, another
// method 405.
//
// Hardening, the same for every endpoint: it binds exactly the address
// given; a fixed, small pool of threads of its own serves the requests, with
// read and write timeouts, a keep-alive limit and a tiny request size limit,
// so a slow or garbage client delays at most other requests to this server,
// never its owner: nothing the owner does waits on this server. Replies carry
// `Cache-Control: no-store` and `X-Content-Type-Options: nosniff`.
//
// Built on cpp-httplib (Debian libcpp-httplib-dev): a maintained library
// whose server has exactly the knobs this needs (thread-pool size, read and
// write timeouts, keep-alive limits, payload limit, bind to one address),
// with a C++ API in one header; civetweb would do too but is a C API with
// string-keyed options. The header is included by http_server.cc only.
#ifndef FABPS_METRICS_HTTP_SERVER_H_
#define FABPS_METRICS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"

namespace httplib {
class Server;
}

namespace fabps::metrics {

struct HttpServerOptions {
  std::string host = "127.0.0.1";    // the address to bind (one address)
  int port = 0;                      // 0: a free port (see port())
  int threads = 2;                   // concurrent requests served
  int timeout_ms = 2000;             // per read and per write of a request
  std::string name = "http server";  // names the server in errors
};

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// A GET route. `path` is matched exactly, or, with `prefix`, as the start
// of the request's (percent-decoded) path. The handler gets that whole
// path; it runs on one of the server's threads, possibly on several at
// once, so it must be thread safe, and it must not block for long.
struct HttpRoute {
  std::string path;
  bool prefix = false;
  std::function<HttpReply(const std::string& path)> handler;
};

class HttpServer {
 public:
  // Binds and starts serving `routes` (their handlers and what they use
  // must outlive the server). Fails (UNAVAILABLE, naming host:port) when
  // the address cannot be bound; INVALID_ARGUMENT for bad options.
  static Result<std::unique_ptr<HttpServer>> Start(
      const HttpServerOptions& options, std::vector<HttpRoute> routes);
  // Stops serving and joins the server's threads; a request in progress
  // is finished first.
  ~HttpServer();

  int port() const { return port_; }

 private:
  HttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace fabps::metrics

#endif  // FABPS_METRICS_HTTP_SERVER_H_
