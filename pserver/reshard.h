// Re-sharding: a model saved by the N pservers of a job, cut for M.
//
// A layout's blocks depend on the parameter list and the block size only;
// N decides just which pserver owns each block (layout.h). So the shards of
// a job restarted with M pservers hold exactly the blocks the old files
// hold, with the same ids and bytes, spread over other owners: re-sharding
// builds the layout for M, and for each new index j writes one checkpoint
// holding the blocks j now owns, each with the values, optimizer state and
// update count the old files had for it. Nothing is recomputed, so the
// parameters are bit-identical before and after.
//
// The new checkpoint of index j goes into dirs[j] with a sequence above
// every file of shard j already there (so it is the newest and the one a
// recovering pserver loads, whatever old-layout files remain). Each file is
// written like any checkpoint (temporary name, fsync, rename, fsync dir).
//
// Thread safety: a reentrant function.
#ifndef FABPS_PSERVER_RESHARD_H_
#define FABPS_PSERVER_RESHARD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "pserver/checkpoint.h"
#include "pserver/checkpointed_model.h"
#include "pserver/protocol_types.h"
#include "pserver/shard.h"

namespace fabps::pserver {

// `model.layout` with `new_count` pservers (same parameters, block size).
Result<Layout> LayoutFor(const Layout& layout, uint32_t new_count);

// Writes checkpoint j (0 <= j < new_count) of the model re-cut for
// `new_count` pservers into dirs[j] (which must exist; dirs.size() ==
// new_count). `rules` gives the update rules (default and per-parameter,
// as the job's InitConfig has them; shard_index is ignored); each rule's
// kind must be the one whose state the model holds for that parameter
// (FailedPrecondition naming it otherwise). Returns what was written, by
// new index. On error, files already written stay (each is complete and
// newest in its directory): callers record nothing until all succeeded.
Result<std::vector<CheckpointInfo>> WriteReshardedCheckpoints(
    const CheckpointedModel& model, uint32_t new_count,
    const ShardOptions& rules, const std::vector<std::string>& dirs);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_RESHARD_H_
