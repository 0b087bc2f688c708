// Launcher: one local fabps job from start to end. It prepares the model's
// data (ModelSpec), starts the store, a master and a standby master, the
// pservers and the trainers (JobProcesses), then, about four times a
// second until every trainer finished: reads the trainers' metrics lines
// (TrainerMetricsReader), polls the daemons and shows the progress
// (ProgressPoller, ProgressDisplay), supervises (JobWatchdog), injects
// faults (FaultInjector), serves resize requests (PserverResize) and
// publishes the status page (StatusPublisher). At the end it stops every
// process in order and prints the summary (JobSummary). Ctrl-C (SIGINT,
// SIGTERM) stops everything in order.
//
// Thread safety: one thread runs it.
#ifndef FABPS_CMD_LAUNCH_LAUNCHER_H_
#define FABPS_CMD_LAUNCH_LAUNCHER_H_

#include <chrono>
#include <memory>
#include <string>

#include "cmd/launch/fault_injector.h"
#include "cmd/launch/job_processes.h"
#include "cmd/launch/job_watchdog.h"
#include "cmd/launch/launch_flags.h"
#include "cmd/launch/model_spec.h"
#include "cmd/launch/process_group.h"
#include "cmd/launch/progress_display.h"
#include "cmd/launch/progress_poller.h"
#include "cmd/launch/pserver_answers.h"
#include "cmd/launch/pserver_resize.h"
#include "cmd/launch/run_dir.h"
#include "cmd/launch/stall_watch.h"
#include "cmd/launch/status_publisher.h"
#include "cmd/launch/supervisor.h"
#include "cmd/launch/trainer_metrics_reader.h"

namespace fabps::launch {

// SIGINT and SIGTERM make a running Launcher stop the job; SIGPIPE is
// ignored.
void InstallStopSignals();

class Launcher {
 public:
  // `flags` resolved (ResolveLaunchFlags) for `model`, which must outlive
  // this.
  Launcher(LaunchFlags flags, ModelSpec* model);
  ~Launcher();
  // Runs the job; the process's exit code (0: every trainer finished).
  int Run();

 private:
  // From the data to the trainers' start.
  Status Start();
  // One turn of the main loop; false with *code set when the job ended.
  bool Step(int* code);
  void ReadProgress();
  JobProgress Progress() const;
  int Finish(bool ok, const std::string& why);

  LaunchFlags f_;
  ModelSpec& model_;
  const RunDir run_;
  const std::chrono::steady_clock::time_point start_;
  ProgressDisplay display_;
  ProcessGroup group_;
  JobProcesses processes_;
  PserverResize resize_;
  PserverAnswers answers_;
  StallWatch progress_watch_;
  TrainerMetricsReader metrics_;
  RateHistory rates_;
  ProgressSample last_sample_;
  StatusPublisher publisher_;
  std::unique_ptr<Supervisor> sup_;
  std::unique_ptr<ProgressPoller> poller_;
  std::unique_ptr<FaultInjector> injector_;
  std::unique_ptr<JobWatchdog> watchdog_;
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_LAUNCHER_H_
