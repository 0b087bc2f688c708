// An RpcServer's connection counters (RpcServerStats) as Prometheus series of
// the daemon that runs it (docs/METRICS.md), read once per scrape:
//   <prefix>_rpc_connections_accepted_total
//   <prefix>_rpc_connections_refused_total{reason="full"}   at accept
//   <prefix>_rpc_connections_dropped_total{reason=...}      after accept:
//       evicted, timed_out, bad_request, over_pending_bytes, bad_frame,
//       pipelined_over_tls
//   <prefix>_rpc_tls_failures_total
//   <prefix>_rpc_request_frames_total
// each with `labels` (e.g. index="0").
#ifndef FABPS_THRIFT_RPC_SERVER_METRICS_H_
#define FABPS_THRIFT_RPC_SERVER_METRICS_H_

#include <string>

#include "metrics/registry.h"
#include "thrift/rpc_server.h"

namespace fabps::rpc {

// `server` must outlive every exposition of `registry` (stop the metrics
// server first).
void RegisterRpcServerMetrics(metrics::Registry* registry,
                              const RpcServer* server,
                              const std::string& prefix,
                              const metrics::Labels& labels);

}  // namespace fabps::rpc

#endif  // FABPS_THRIFT_RPC_SERVER_METRICS_H_
