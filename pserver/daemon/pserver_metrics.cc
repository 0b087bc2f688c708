#include "pserver/daemon/pserver_metrics.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <string>

namespace fabps::pserver {

void RegisterPserverMetrics(metrics::Registry* registry,
                            PServerService* service) {
  struct Snapshot {
    rpc::pserver::PsStatus status;
    CheckpointInfo checkpoint;
    double checkpoint_seconds = 0;
  };
  // Written by the refresh and read by the read-outs, all under the
  // registry's lock.
  auto snap = std::make_shared<Snapshot>();
  registry->AddRefresh([snap, service] {
    service->GetStatus(snap->status);
    snap->checkpoint = service->LastWritten();
    snap->checkpoint_seconds = service->LastCheckpointSeconds();
  });
  rpc::pserver::PsStatus first;
  service->GetStatus(first);
  metrics::Labels labels = {{"index", std::to_string(first.index)}};
  using metrics::Type;
  auto add = [&](Type type, const char* name, const char* help,
                 std::function<double(const Snapshot&)> read) {
    registry->AddReadOut(type, name, help, labels,
                         [snap, read] { return read(*snap); });
  };
  add(Type::kCounter, "fabps_pserver_pushes_applied_total",
      "gradient pushes (one block each) applied to the shard",
      [](const Snapshot& s) { return s.status.gradients_applied; });
  add(Type::kCounter, "fabps_pserver_pushes_rejected_total",
      "data-plane frames refused (bad slot, block, size or trainer)",
      [](const Snapshot& s) { return s.status.gradients_rejected; });
  add(Type::kCounter, "fabps_pserver_bytes_applied_total",
      "gradient bytes applied to the shard",
      [](const Snapshot& s) { return s.status.bytes_applied; });
  add(Type::kGauge, "fabps_pserver_trainers_registered",
      "trainers registered on the data plane",
      [](const Snapshot& s) { return s.status.trainers_registered; });
  add(Type::kGauge, "fabps_pserver_initialized",
      "1 once the parameters are initialized, else 0",
      [](const Snapshot& s) { return s.status.initialized ? 1 : 0; });
  add(Type::kGauge, "fabps_pserver_blocks", "parameter blocks on this pserver",
      [](const Snapshot& s) { return s.status.num_blocks; });
  add(Type::kGauge, "fabps_pserver_checkpoint_timestamp_seconds",
      "Unix time of the last checkpoint written (0: none yet)",
      [](const Snapshot& s) { return s.status.last_checkpoint_unix_ms / 1e3; });
  add(Type::kGauge, "fabps_pserver_checkpoint_age_seconds",
      "seconds since the last checkpoint was written (NaN: none yet)",
      [](const Snapshot& s) {
        if (s.status.last_checkpoint_unix_ms == 0) return std::nan("");
        auto now = std::chrono::system_clock::now().time_since_epoch();
        double now_ms = static_cast<double>(
            std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
        return (now_ms - s.status.last_checkpoint_unix_ms) / 1e3;
      });
  add(Type::kGauge, "fabps_pserver_checkpoint_size_bytes",
      "size of the last checkpoint written (0: none yet)",
      [](const Snapshot& s) {
        return static_cast<double>(s.checkpoint.bytes);
      });
  // Hashed tables, summed over the tables this pserver holds.
  auto sum = [](const Snapshot& s, int64_t rpc::pserver::TableStatus::*f) {
    double total = 0;
    for (const auto& t : s.status.tables) total += static_cast<double>(t.*f);
    return total;
  };
  using TS = rpc::pserver::TableStatus;
  add(Type::kGauge, "fabps_pserver_hashed_rows", "rows held in hashed tables",
      [sum](const Snapshot& s) { return sum(s, &TS::rows); });
  add(Type::kGauge, "fabps_pserver_hashed_bytes",
      "bytes of hashed tables' rows and admission sketches",
      [sum](const Snapshot& s) { return sum(s, &TS::bytes); });
  add(Type::kCounter, "fabps_pserver_hashed_rows_admitted_total",
      "hashed-table rows created (ids admitted)",
      [sum](const Snapshot& s) { return sum(s, &TS::admitted); });
  add(Type::kCounter, "fabps_pserver_hashed_rows_evicted_ttl_total",
      "hashed-table rows dropped past their TTL",
      [sum](const Snapshot& s) { return sum(s, &TS::evicted_ttl); });
  add(Type::kCounter, "fabps_pserver_hashed_rows_evicted_budget_total",
      "hashed-table rows dropped to keep a table within its budget",
      [sum](const Snapshot& s) { return sum(s, &TS::evicted_budget); });
  add(Type::kCounter, "fabps_pserver_hashed_rows_not_admitted_total",
      "pushed hashed-table rows dropped: their id was not admitted yet",
      [sum](const Snapshot& s) { return sum(s, &TS::not_admitted); });
  add(Type::kGauge, "fabps_pserver_checkpoint_duration_seconds",
      "how long writing the last checkpoint took (0: none yet)",
      [](const Snapshot& s) { return s.checkpoint_seconds; });
}

}  // namespace fabps::pserver
