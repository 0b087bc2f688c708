// MetricsServer: serves a Registry's exposition over HTTP for Prometheus.
//
// Only GET (and HEAD) of /metrics is answered; every other path or method
// gets 404/405. It is an HttpServer (metrics/http_server.h) with that one
// route: a slow or garbage client delays at most other scrapes, never the
// daemon.
#ifndef FABPS_METRICS_METRICS_SERVER_H_
#define FABPS_METRICS_METRICS_SERVER_H_

#include <memory>
#include <string>

#include "base/status.h"
#include "metrics/http_server.h"
#include "metrics/registry.h"

namespace fabps::metrics {

// host, port (0: a free one), threads, timeouts: as HttpServer's.
using MetricsServerOptions = HttpServerOptions;

class MetricsServer {
 public:
  // Binds and starts serving `registry`, which must outlive the server.
  // Fails (UNAVAILABLE, naming host:port) when the address cannot be bound.
  static Result<std::unique_ptr<MetricsServer>> Start(
      const Registry* registry, const MetricsServerOptions& options);
  // Stops serving and joins the server's threads.
  ~MetricsServer() = default;

  int port() const { return http_->port(); }

 private:
  MetricsServer() = default;
  std::unique_ptr<HttpServer> http_;
};

}  // namespace fabps::metrics

#endif  // FABPS_METRICS_METRICS_SERVER_H_
