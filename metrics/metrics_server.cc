#include "metrics/metrics_server.h"

#include "metrics/exposition.h"

namespace fabps::metrics {

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const Registry* registry, const MetricsServerOptions& options) {
  HttpServerOptions o = options;
  o.name = "metrics server";
  HttpRoute metrics{"/metrics", false, [registry](const std::string&) {
                      return HttpReply{200, kContentType, registry->Expose()};
                    }};
  FABPS_ASSIGN_OR_RETURN(auto http, HttpServer::Start(o, {metrics}));
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  s->http_ = std::move(http);
  return s;
}

}  // namespace fabps::metrics
