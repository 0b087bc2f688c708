// MetricsServer: serves a Registry's exposition over HTTP for Prometheus.
//
// Only GET (and HEAD) of /metrics is answered; every other path or method
// gets 404/405. Requests are served by a fixed, small pool of threads of
// the server's own, with read and write timeouts and a tiny request size
// limit, so a slow or garbage client delays at most other scrapes, never
// the daemon: nothing the daemon does waits on this server.
//
// Built on cpp-httplib (Debian libcpp-httplib-dev): a maintained library
// whose server has exactly the knobs this needs (thread-pool size, read and
// write timeouts, keep-alive limits, payload limit, bind to one address),
// with a C++ API in one header; civetweb would do too but is a C API with
// string-keyed options.
#ifndef FABPS_METRICS_METRICS_SERVER_H_
#define FABPS_METRICS_METRICS_SERVER_H_

#include <memory>
#include <string>
#include <thread>

#include "base/status.h"
#include "metrics/registry.h"

namespace httplib {
class Server;
}

namespace fabps::metrics {

struct MetricsServerOptions {
  std::string host = "127.0.0.1";  // the address to bind (one address)
  int port = 0;                    // 0: a free port (see port())
  int threads = 2;                 // concurrent requests served
  int timeout_ms = 2000;           // per read and per write of a request
};

class MetricsServer {
 public:
  // Binds and starts serving `registry`, which must outlive the server.
  // Fails (UNAVAILABLE, naming host:port) when the address cannot be bound.
  static Result<std::unique_ptr<MetricsServer>> Start(
      const Registry* registry, const MetricsServerOptions& options);
  // Stops serving and joins the server's threads.
  ~MetricsServer();

  int port() const { return port_; }

 private:
  MetricsServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace fabps::metrics

#endif  // FABPS_METRICS_METRICS_SERVER_H_
