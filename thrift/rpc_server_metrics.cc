#include "thrift/rpc_server_metrics.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

namespace fabps::rpc {

void RegisterRpcServerMetrics(metrics::Registry* registry,
                              const RpcServer* server,
                              const std::string& prefix,
                              const metrics::Labels& labels) {
  // Taken by the refresh and read by the read-outs, under the registry's
  // lock.
  auto snap = std::make_shared<RpcServerStats>();
  registry->AddRefresh([snap, server] { *snap = server->stats(); });
  auto add = [&](const std::string& name, const char* help,
                 const metrics::Labels& extra,
                 uint64_t RpcServerStats::*field) {
    metrics::Labels all = labels;
    all.insert(all.end(), extra.begin(), extra.end());
    registry->AddReadOut(
        metrics::Type::kCounter, prefix + name, help, all,
        [snap, field] { return static_cast<double>((*snap).*field); });
  };
  add("_rpc_connections_accepted_total", "control-plane connections accepted",
      {}, &RpcServerStats::accepted);
  add("_rpc_connections_refused_total",
      "control-plane connections closed at accept (every slot busy, or out "
      "of file descriptors)",
      {{"reason", "full"}}, &RpcServerStats::refused);
  const char* dropped =
      "control-plane connections closed by the server after accept, by "
      "reason";
  add("_rpc_connections_dropped_total", dropped, {{"reason", "evicted"}},
      &RpcServerStats::evicted);
  add("_rpc_connections_dropped_total", dropped, {{"reason", "timed_out"}},
      &RpcServerStats::timed_out);
  add("_rpc_connections_dropped_total", dropped, {{"reason", "bad_request"}},
      &RpcServerStats::bad_requests);
  add("_rpc_connections_dropped_total", dropped,
      {{"reason", "over_pending_bytes"}}, &RpcServerStats::over_pending_bytes);
  add("_rpc_connections_dropped_total", dropped, {{"reason", "bad_frame"}},
      &RpcServerStats::bad_frames);
  add("_rpc_connections_dropped_total", dropped,
      {{"reason", "pipelined_over_tls"}}, &RpcServerStats::pipelined_over_tls);
  add("_rpc_tls_failures_total", "TLS handshakes or records that failed", {},
      &RpcServerStats::tls_failures);
  add("_rpc_request_frames_total", "request frames read", {},
      &RpcServerStats::request_frames);
}

}  // namespace fabps::rpc
