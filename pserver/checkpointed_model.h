// A whole model gathered from the checkpoint files of every shard of a job:
// what offline export (fabps-export --checkpoints) and re-sharding (a job
// restarted with another pserver count) read.
//
// The layout recorded in each file says which blocks the file holds and
// where they sit in their parameters, so the shards' blocks are put back
// together into whole parameters (values, optimizer state) with no other
// input. The files may be spread over several directories (one per pserver
// host) or share one.
//
// Thread safety: plain values and a reentrant function.
#ifndef FABPS_PSERVER_CHECKPOINTED_MODEL_H_
#define FABPS_PSERVER_CHECKPOINTED_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "pserver/protocol_types.h"
#include "pserver/update_rule.h"

namespace fabps::pserver {

// One parameter, whole, row-major, in its dtype. A hashed table's rows are
// those of every bucket, in ascending id order: row i is id ids[i]'s, last
// updated at updated_ms[i].
struct CheckpointedParam {
  RuleKind rule = RuleKind::kSgd;  // whose state `state` holds
  std::string values;
  std::string state[2];  // StateSlots(rule) arrays, each values.size() bytes
  std::vector<uint64_t> ids;        // hashed tables only
  std::vector<int64_t> updated_ms;  // hashed tables only
  // Hashed tables: ids evicted (tombstones, ascending) and when.
  std::vector<uint64_t> evicted_ids;
  std::vector<int64_t> evicted_ms;
};

struct CheckpointedModel {
  Layout layout;                          // as the files record it
  std::vector<CheckpointedParam> params;  // by index in layout.params()
  std::vector<uint64_t> update_counts;    // by global block id
  std::vector<std::string> files;         // the file read for shard i
  // The oldest of the files' write times (unix ms): every row updated
  // before it, and every id evicted before it, is in the model.
  int64_t reached_ms = 0;
};

// Lists the checkpoint files ("shard-<i>-<seq>.ckpt") in `dirs` and their
// "ps-<i>" subdirectories (fabps-pserver --store keeps pserver i's files in
// <checkpoint-dir>/ps-<i>) and, for
// each shard index, takes the newest one that verifies completely (every
// CRC; an older one when the newest is damaged, the reason logged). Shard
// 0's choice fixes the layout (so its pserver count N); shards 0..N-1 must
// each have a verifying file with that same layout (older files of another
// count are skipped, saying so). NotFound when a shard has no file at all;
// Corruption or FailedPrecondition naming every file tried otherwise.
Result<CheckpointedModel> ReadNewestCheckpoints(
    const std::vector<std::string>& dirs);

// Writes the parameters of `model` to `path` as a model file
// (protocol/model_format.h; a hashed table as two tensors, "<name>.ids"
// U64 [rows] ascending and "<name>.values" [rows, row shape...]) and, when
// `state_path` is not empty, their optimizer state to `state_path` (a parameter
// trained by plain SGD has none). `source` goes into the metadata.
//
// With `since_ms`, a delta for serving instead: hashed tables hold only the
// rows updated at or after since_ms, and "<name>.evicted" (U64, ascending)
// the ids evicted at or after it; dense parameters are whole. Applying a
// delta to the model it follows (drop the evicted ids, then put the rows)
// gives the model of its "fabps.reached_ms". Metadata: "fabps.reached_ms"
// always, "fabps.since_ms" in a delta (docs/formats/safetensors.md).
Status WriteCheckpointedModel(const CheckpointedModel& model,
                              const std::string& path,
                              const std::string& state_path,
                              const std::string& source,
                              std::optional<int64_t> since_ms = std::nullopt);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_CHECKPOINTED_MODEL_H_
