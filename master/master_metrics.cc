#include "master/master_metrics.h"

#include <memory>

namespace fabps::master {

void RegisterMasterMetrics(metrics::Registry* registry,
                           TaskDispatcher* dispatcher) {
  // Written by the refresh and read by the read-outs, under the registry's
  // lock.
  auto snap = std::make_shared<DispatcherStatus>();
  registry->AddRefresh([snap, dispatcher] { *snap = dispatcher->GetStatus(); });
  using metrics::Type;
  auto add = [&](Type type, const char* name, const char* help,
                 const metrics::Labels& labels,
                 std::function<double(const DispatcherStatus&)> read) {
    registry->AddReadOut(type, name, help, labels,
                         [snap, read] { return read(*snap); });
  };
  const char* tasks_help = "tasks of the current pass, by state";
  add(Type::kGauge, "fabps_master_tasks", tasks_help, {{"state", "todo"}},
      [](const DispatcherStatus& s) { return s.todo; });
  add(Type::kGauge, "fabps_master_tasks", tasks_help, {{"state", "pending"}},
      [](const DispatcherStatus& s) { return s.pending; });
  add(Type::kGauge, "fabps_master_tasks", tasks_help, {{"state", "done"}},
      [](const DispatcherStatus& s) { return s.done; });
  add(Type::kGauge, "fabps_master_tasks", tasks_help, {{"state", "failed"}},
      [](const DispatcherStatus& s) { return s.failed; });
  add(Type::kGauge, "fabps_master_pass", "the current pass (0-based)", {},
      [](const DispatcherStatus& s) { return s.pass; });
  add(Type::kCounter, "fabps_master_task_timeouts_total",
      "tasks handed out again after timing out, since this master started", {},
      [](const DispatcherStatus& s) { return s.timeouts; });
  add(Type::kGauge, "fabps_master_task_timeout_seconds",
      "the timeout the next dispatched task gets", {},
      [](const DispatcherStatus& s) { return s.task_timeout_ms / 1e3; });
  add(Type::kGauge, "fabps_master_task_duration_avg_seconds",
      "moving average of task durations", {},
      [](const DispatcherStatus& s) { return s.avg_task_ms / 1e3; });
  add(Type::kGauge, "fabps_master_trainers_seen",
      "trainers that asked for tasks", {},
      [](const DispatcherStatus& s) { return s.trainers.size(); });
}

}  // namespace fabps::master
