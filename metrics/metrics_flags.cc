#include "metrics/metrics_flags.h"

#include "base/file_util.h"

namespace fabps::metrics {

Result<std::unique_ptr<MetricsServer>> StartMetricsServer(
    const MetricsFlags& flags, const std::string& host,
    const Registry* registry) {
  if (!flags.enabled()) return std::unique_ptr<MetricsServer>();
  MetricsServerOptions o;
  o.host = host;
  o.port = flags.port;
  auto server = MetricsServer::Start(registry, o);
  if (!server.ok())
    return Status::Unavailable("--metrics-port: " + server.status().message());
  if (!flags.port_file.empty()) {
    Status s = WriteFileAtomically(flags.port_file,
                                   std::to_string((*server)->port()) + "\n");
    if (!s.ok()) return Status::IOError("--metrics-port-file: " + s.message());
  }
  return server;
}

}  // namespace fabps::metrics
