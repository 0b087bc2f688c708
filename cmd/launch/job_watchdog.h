// JobWatchdog: the launcher's supervision of a running job, once per loop.
// A process that ended without the launcher causing it (kill -9 from
// outside, a crash, exit 3 after a lost lease, a standby master's death) is
// restarted with back-off by the Supervisor, up to --restarts-per-role per
// role; a pserver that serves but answers no status call for
// --unresponsive-timeout (frozen) is killed and restarted the same way. The
// job fails when a role runs out of restarts, or when it makes no progress
// (no task done, no update applied) for --stall-timeout, with a diagnosis
// naming the processes.
//
// Thread safety: the launcher's main thread only.
#ifndef FABPS_CMD_LAUNCH_JOB_WATCHDOG_H_
#define FABPS_CMD_LAUNCH_JOB_WATCHDOG_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "cmd/launch/launch_flags.h"
#include "cmd/launch/process_group.h"
#include "cmd/launch/pserver_answers.h"
#include "cmd/launch/run_dir.h"
#include "cmd/launch/stall_watch.h"
#include "cmd/launch/supervisor.h"
#include "trainer/master_client.h"

namespace fabps::launch {

class JobWatchdog {
 public:
  // Every pointer must outlive this.
  JobWatchdog(const LaunchFlags* flags, const RunDir* run, ProcessGroup* group,
              Supervisor* supervisor, PserverAnswers* answers,
              StallWatch* progress)
      : f_(*flags),
        run_(*run),
        group_(*group),
        sup_(*supervisor),
        answers_(*answers),
        progress_(*progress),
        finished_(flags->trainers, false) {}

  // Handles the processes that `ended` (Reap's names) and the frozen
  // pservers, starts the restarts that are due, and checks progress; the
  // reason when the job must fail. `master`: its latest status, for the
  // diagnosis.
  Status Check(const std::vector<std::string>& ended,
               const trainer::MasterStatusSummary& master);

  // Trainer t exited 0.
  bool Finished(int t) const {
    return t >= 0 && t < static_cast<int>(finished_.size()) && finished_[t];
  }
  bool AllFinished() const;

 private:
  // What each process is doing, for a job that stopped progressing.
  std::string Diagnosis(const trainer::MasterStatusSummary& master) const;

  const LaunchFlags& f_;
  const RunDir& run_;
  ProcessGroup& group_;
  Supervisor& sup_;
  PserverAnswers& answers_;
  StallWatch& progress_;
  std::vector<bool> finished_;
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_JOB_WATCHDOG_H_
