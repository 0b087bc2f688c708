// The master's Prometheus metrics (docs/METRICS.md): read-outs of the
// dispatcher's status, taken once per scrape.
#ifndef FABPS_MASTER_MASTER_METRICS_H_
#define FABPS_MASTER_MASTER_METRICS_H_

#include "master/task_dispatcher.h"
#include "metrics/registry.h"

namespace fabps::master {

// Registers the metrics on `registry`. `dispatcher` must outlive every
// exposition of `registry` (stop its metrics server first).
void RegisterMasterMetrics(metrics::Registry* registry,
                           TaskDispatcher* dispatcher);

}  // namespace fabps::master

#endif  // FABPS_MASTER_MASTER_METRICS_H_
