// JobView: what the launcher's status page (cmd/launch/status_page.h)
// shows of a local job, and its JSON (GET /status.json). The launcher's
// loop fills one and publishes its JSON; the page's script draws it.
//
// JSON (every field always present; numbers unknown yet are null):
//   {"job": "fashion-mnist", "model": "fashion-mnist", "metric": "acc",
//    "health": "running", "reason": "",
//    "elapsed_s": 12.5, "passes": 5, "pass": 1,
//    "tasks_done": 3, "tasks_total": 16,
//    "samples_per_sec": 5230.0, "updates_per_sec": 410.0, "loss": 0.41,
//    "provider": "tcp;ofi_rxm", "store": "local:/run/store",
//    "pass_results": [{"pass": 1, "loss": 0.52, "accuracy": 0.83,
//                      "seconds": 9.1}, ...],
//    "rates": [{"t": 1.0, "samples_per_sec": 5100.0,
//               "updates_per_sec": 400.0, "loss": 0.6}, ...],
//    "processes": [{"name": "pserver-0", "role": "pserver", "index": 0,
//                   "state": "running", "pid": 1234, "restarts": 0,
//                   "detail": "", "log": "pserver-0.log"}, ...]}
// "health": starting (before the first trained sample), running,
// degraded (a process waits for its restart or a pserver answers no status
// call), finished, failed (then "reason" says why). "pass" is 1-based, the
// pass in progress (passes + 1 once all are over is reported as passes).
// "log" names a file of the run directory, served at /logs/<log>.
//
// Not thread safe; a plain value.
#ifndef FABPS_CMD_LAUNCH_JOB_VIEW_H_
#define FABPS_CMD_LAUNCH_JOB_VIEW_H_

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fabps::launch {

struct ProcessView {
  std::string name;    // "pserver-0", "trainer-1", "master-standby"
  std::string role;    // pserver, trainer, master, etcd, ...
  int index = -1;      // -1: none (masters)
  std::string state;   // running, restarting, finished, ended
  int pid = 0;         // 0: not running
  int restarts = 0;    // of its role, so far
  std::string detail;  // e.g. how it ended, how long a pserver was silent
  std::string log;     // file name in the run directory; empty: none
};

struct PassView {
  int pass = 0;  // 1-based
  double loss = NAN, accuracy = NAN, seconds = 0;
};

struct RatePoint {
  double t = 0;  // seconds since the launcher started
  double samples_per_sec = 0, updates_per_sec = 0, loss = NAN;
};

// Throughput over the whole run in at most `capacity` points: when full,
// every other point is dropped and points are taken half as often, so a
// long run still shows its beginning and the page stays small.
class RateHistory {
 public:
  explicit RateHistory(size_t capacity = 512, double first_interval_s = 1.0)
      : capacity_(capacity < 4 ? 4 : capacity), interval_(first_interval_s) {}
  // Keeps `p` when at least the current interval passed since the last
  // point kept.
  void Add(const RatePoint& p);
  const std::vector<RatePoint>& points() const { return points_; }

 private:
  size_t capacity_;
  double interval_;
  std::vector<RatePoint> points_;
};

struct JobView {
  std::string job, model, metric = "acc";
  std::string health = "starting", reason;
  double elapsed_s = 0;
  int passes = 0;
  int64_t pass = 1, tasks_done = 0, tasks_total = 0;
  double samples_per_sec = 0, updates_per_sec = 0, loss = NAN;
  std::string provider, store;
  std::vector<PassView> pass_results;
  std::vector<RatePoint> rates;
  std::vector<ProcessView> processes;
};

// The JSON above; NaN becomes null.
nlohmann::json ToJson(const JobView& view);

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_JOB_VIEW_H_
