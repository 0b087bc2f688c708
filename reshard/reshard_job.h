// Re-sharding a job's checkpoints for another pserver count: the steps
// fabps-reshard runs, around pserver/reshard.h (the blocks) and
// coord/protocol/pserver_count_change.h (the store).
//
// With a store (a stopped job):
//   1. PserverCountChange::Begin: every index held by this change (refused
//      while a pserver of the job runs).
//   2. The old count's directories from ps/<i>/checkpoint; the newest good
//      checkpoint of every shard there (ReadNewestCheckpoints) and the
//      job's InitConfig (init-0.config beside shard 0's file: the rules).
//   3. Directories of the new indices: the recorded one where index i
//      existed, else <checkpoint_root>/ps-<i> (checkpoint_root defaults to
//      the parent of ps/0's directory, where fabps-pserver --store puts
//      them).
//   4. The new checkpoints (WriteReshardedCheckpoints), then init-<j>.config
//      with the new layout in each new directory.
//   5. Commit: ps/count and the checkpoint records in one transaction.
//   If 4 or 5 fails, the files written are removed and the init configs
//   put back: the job is as it was.
//
// Offline (no store): the checkpoints in `checkpoint_dirs`, written to
// <output_root>/ps-<j> with their init configs, for pservers started with
// --checkpoint-dir <output_root>/ps-<j> --index j (no store) or a job whose
// store records those directories.
//
// Thread safety: a reentrant function.
#ifndef FABPS_RESHARD_RESHARD_JOB_H_
#define FABPS_RESHARD_RESHARD_JOB_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace fabps::reshard {

struct ReshardRequest {
  uint32_t new_count = 0;
  // With a store:
  std::string store_spec;  // "" : offline
  std::string job = "default";
  std::string checkpoint_root;  // "" : beside ps/0's directory
  // Offline:
  std::vector<std::string> checkpoint_dirs;
  std::string output_root;
};

struct ReshardResult {
  uint32_t old_count = 0;
  uint64_t blocks = 0;
  std::vector<std::string> files;  // the new checkpoints, by new index
};

Result<ReshardResult> ReshardJob(const ReshardRequest& request);

}  // namespace fabps::reshard

#endif  // FABPS_RESHARD_RESHARD_JOB_H_
