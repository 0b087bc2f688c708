// StatusPublisher: the launcher's side of the job's status page
// (status_page.h): starts the page with --status-port, and turns the job as
// the launcher sees it (progress, passes, every process's state) into a
// JobView (job_view.h) for it to serve.
//
// Thread safety: the launcher's main thread only (the page serves the
// published JSON from its own threads).
#ifndef FABPS_CMD_LAUNCH_STATUS_PUBLISHER_H_
#define FABPS_CMD_LAUNCH_STATUS_PUBLISHER_H_

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"
#include "cmd/launch/job_view.h"
#include "cmd/launch/job_watchdog.h"
#include "cmd/launch/launch_flags.h"
#include "cmd/launch/process_group.h"
#include "cmd/launch/progress_display.h"
#include "cmd/launch/pserver_answers.h"
#include "cmd/launch/status_page.h"
#include "cmd/launch/supervisor.h"
#include "cmd/launch/trainer_metrics_reader.h"

namespace fabps::launch {

// What the page shows besides the processes, as of the last poll.
struct JobProgress {
  ProgressSample sample;
  std::string provider;  // the fabric the pservers report; "" unknown
  std::string store_spec;
  const std::map<int, PassResult>* passes = nullptr;
  const RateHistory* rates = nullptr;
  int64_t samples = 0;  // the trainers' so far; 0: still starting
};

class StatusPublisher {
 public:
  // `flags`, `group` must outlive this; `metric_label`: "acc", "auc".
  StatusPublisher(const LaunchFlags* flags, std::string metric_label,
                  ProcessGroup* group);
  ~StatusPublisher();

  // Serves the page when --status-port or --status-port-file asks for it,
  // writes the port file and prints the address.
  Status Start(const JobProgress& progress);
  bool on() const { return page_ != nullptr; }
  // The supervision parts, once they exist (nullptr before).
  void Watch(const Supervisor* supervisor, const JobWatchdog* watchdog,
             const PserverAnswers* answers) {
    sup_ = supervisor;
    watchdog_ = watchdog;
    answers_ = answers;
  }
  // Publishes the job as it is now. `health` empty: judged from the
  // processes (starting, running, degraded).
  void Publish(const JobProgress& progress, const std::string& health = "",
               const std::string& reason = "");

 private:
  // One process's view; sets *degraded when it shows trouble.
  ProcessView ViewOf(const std::string& name, bool judge_ended,
                     std::chrono::steady_clock::time_point now,
                     bool* degraded) const;

  const LaunchFlags& f_;
  const std::string metric_label_;
  ProcessGroup& group_;
  const Supervisor* sup_ = nullptr;
  const JobWatchdog* watchdog_ = nullptr;
  const PserverAnswers* answers_ = nullptr;
  const std::chrono::steady_clock::time_point start_;
  std::unique_ptr<StatusPage> page_;
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_STATUS_PUBLISHER_H_
