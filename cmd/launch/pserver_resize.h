// PserverResize: changes a job's pserver count. Before any pserver starts,
// a job (run directory or etcd job) whose pservers last ran with another
// count than --pservers has its checkpoints re-cut for --pservers
// (reshard/reshard_job.h). While the job runs, a count written to
// <run-dir>/resize.request (fabps-reshard --run-dir) stops the pservers
// (each checkpoints and releases its index), re-cuts their checkpoints and
// starts that many; the trainers follow through the store. The answer goes
// to <run-dir>/resize.done.
//
// Thread safety: the launcher's main thread only.
#ifndef FABPS_CMD_LAUNCH_PSERVER_RESIZE_H_
#define FABPS_CMD_LAUNCH_PSERVER_RESIZE_H_

#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "cmd/launch/job_processes.h"
#include "cmd/launch/launch_flags.h"
#include "cmd/launch/process_group.h"
#include "cmd/launch/run_dir.h"
#include "cmd/launch/supervisor.h"
#include "coord/store.h"

namespace fabps::launch {

class PserverResize {
 public:
  // Every pointer must outlive this; a resize sets flags->pservers.
  PserverResize(LaunchFlags* flags, const RunDir* run, ProcessGroup* group,
                JobProcesses* processes,
                std::function<void(const std::string&)> note)
      : f_(*flags),
        run_(*run),
        group_(*group),
        processes_(*processes),
        note_(std::move(note)) {}

  // Re-cuts the checkpoints when the store records another pserver count.
  Status ReshardIfCountChanged();

  enum class Outcome {
    kNone,      // no request
    kAnswered,  // answered without touching the pservers
    kFailed,    // the pservers were stopped and started again, as they were
    kResized,   // the job runs on the new count
  };
  // Serves a pending resize request; `supervisor` stops restarting the
  // pservers it stops.
  Outcome MaybeResize(Supervisor* supervisor);

 private:
  Result<std::unique_ptr<coord::Store>> OpenJobStore();
  // After pservers 0..count-1 stopped: OK when each exited 0 and its index
  // is free in the store (waiting for a lease that outlived its pserver, at
  // most the lease TTL and 5 s).
  Status StoppedCleanly(int count);

  LaunchFlags& f_;
  const RunDir& run_;
  ProcessGroup& group_;
  JobProcesses& processes_;
  std::function<void(const std::string&)> note_;
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_PSERVER_RESIZE_H_
