// JobProcesses: starts the processes of a launched job under their names
// in the ProcessGroup: helpers that run to their end (a converter), the
// store (the embedded local store, an etcd given or one started), the two
// masters, the pservers and the trainers, each logging to the run
// directory. A daemon counts as started once it wrote its port file; an
// etcd started here once it answers.
//
// Thread safety: the launcher's main thread only.
#ifndef FABPS_CMD_LAUNCH_JOB_PROCESSES_H_
#define FABPS_CMD_LAUNCH_JOB_PROCESSES_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "cmd/launch/launch_flags.h"
#include "cmd/launch/model_spec.h"
#include "cmd/launch/process_group.h"
#include "cmd/launch/run_dir.h"

namespace fabps::launch {

class JobProcesses {
 public:
  // `flags`, `run` and `group` must outlive this; flags.pservers is read
  // at each StartPservers (a resize changes it).
  JobProcesses(const LaunchFlags* flags, const RunDir* run, ProcessGroup* group)
      : f_(*flags), run_(*run), group_(*group) {}

  // Runs `argv` under `name` to its end; IOError with its log's tail when it
  // does not exit 0.
  Status RunHelper(const std::string& name,
                   const std::vector<std::string>& argv);
  // The job's store: --etcd, a local etcd with --start-etcd (started here),
  // else the embedded local store in the run directory. Sets store_spec().
  Status StartStore();
  const std::string& store_spec() const { return store_spec_; }
  // Two masters: one leads (holds master/lock in the store), the other
  // stands by and takes over within the lease TTL if the leader dies.
  Status StartMasters();
  // pserver-0..flags.pservers-1, each serving before the next starts.
  Status StartPservers();
  Status StartTrainers(const ModelSpec& model);

 private:
  // Waits until `name` wrote its port file; Unavailable when it exited
  // first, TimedOut after timeout_ms, each with its log's tail.
  Status WaitForPortFile(const std::string& name, int timeout_ms);
  // Waits until the etcd started under "etcd" answers a read of the store
  // (store_spec_); Unavailable with its log's tail when it exited first,
  // TimedOut after timeout_ms.
  Status WaitForEtcd(int timeout_ms);

  const LaunchFlags& f_;
  const RunDir& run_;
  ProcessGroup& group_;
  std::string store_spec_;
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_JOB_PROCESSES_H_
