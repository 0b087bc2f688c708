// The metrics flags every fabps daemon offers, and starting its metrics
// server from them:
//   --metrics-port N       serve GET /metrics on N (0, the default: off)
//   --metrics-port-file F  write the metrics port to F once serving; with
//                          --metrics-port 0 a free port is chosen
// The server binds the daemon's own listen address (--host), as the control
// plane does.
#ifndef FABPS_METRICS_METRICS_FLAGS_H_
#define FABPS_METRICS_METRICS_FLAGS_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "base/status.h"
#include "metrics/metrics_server.h"

namespace fabps::metrics {

struct MetricsFlags {
  int port = 0;
  std::string port_file;
  bool enabled() const { return port != 0 || !port_file.empty(); }
};

inline void AddMetricsFlags(CLI::App& app, MetricsFlags* f) {
  app.add_option("--metrics-port", f->port,
                 "serve Prometheus metrics (GET /metrics) on this port "
                 "(0: off, or a free port with --metrics-port-file)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--metrics-port-file", f->port_file,
                 "write the metrics port here once serving (default: none)");
}

// Starts serving `registry` on `host` as the flags say; null when metrics
// are off. Errors name the flag.
Result<std::unique_ptr<MetricsServer>> StartMetricsServer(
    const MetricsFlags& flags, const std::string& host,
    const Registry* registry);

}  // namespace fabps::metrics

#endif  // FABPS_METRICS_METRICS_FLAGS_H_
