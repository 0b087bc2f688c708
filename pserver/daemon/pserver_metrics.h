// The pserver's Prometheus metrics (docs/METRICS.md): read-outs of what the
// service already counts (its Status RPC's data and the last checkpoint),
// taken once per scrape. Every series has the label index="<i>".
#ifndef FABPS_PSERVER_DAEMON_PSERVER_METRICS_H_
#define FABPS_PSERVER_DAEMON_PSERVER_METRICS_H_

#include "metrics/registry.h"
#include "pserver/daemon/ps_service.h"

namespace fabps::pserver {

// Registers the metrics on `registry`. `service` must outlive every
// exposition of `registry` (stop its metrics server first).
void RegisterPserverMetrics(metrics::Registry* registry,
                            PServerService* service);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_DAEMON_PSERVER_METRICS_H_
