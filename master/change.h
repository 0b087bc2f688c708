// The master's journal records. Every change to the task queues is one
// Change; the queues are exactly the result of applying the journal in order
// (TaskQueues::Apply), so a master that replays the store's journal resumes
// where the previous one stopped. A Change carries every input the
// transition needs (times, deadlines, where a failed task goes), so replay
// does not depend on the clock or the flags of the replaying process.
//
// Encoding: "FMJ1" | type | fields | CRC32C of everything before it.
// DecodeChange checks the magic, the CRC, every length and count bound, and
// that nothing trails; it reports Corruption, never crashes.
#ifndef FABPS_MASTER_CHANGE_H_
#define FABPS_MASTER_CHANGE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/little_endian.h"
#include "base/status.h"
#include "recordio/format.h"

namespace fabps::master {

// Bounds on decoded input.
constexpr size_t kMaxGlobs = 4096;
constexpr size_t kMaxTasks = 1u << 24;
constexpr size_t kMaxChunksPerTask = 1u << 16;
constexpr size_t kMaxPathBytes = 4096;

// A task: a few chunks of the dataset. Its id is its index in the dataset.
struct TaskDef {
  std::vector<recordio::ChunkRef> chunks;
};

struct Change {
  enum class Type : uint8_t {
    kSetDataset = 1,  // globs, tasks: the dataset; every task enters todo
    kDispatch =
        2,  // task_id, epoch (= old + 1), time_ms, deadline_ms: todo -> pending
    kFinish = 3,  // task_id, epoch, time_ms: pending -> done
    kFail =
        4,  // task_id, epoch, timed_out, to_failed: pending -> todo or failed
    kNewPass =
        5,  // pass (= old + 1): done -> todo, when todo and pending are empty
    kSaveGrant = 6,  // trainer, deadline_ms: the save election's grant
  };
  Type type = Type::kDispatch;
  uint64_t task_id = 0;
  uint64_t epoch = 0;
  int64_t time_ms = 0;
  int64_t deadline_ms = 0;
  bool timed_out = false;
  bool to_failed = false;
  int64_t pass = 0;
  std::vector<std::string> globs;
  std::vector<TaskDef> tasks;
  std::string trainer;  // kSaveGrant: 1..kMaxTrainerBytes bytes
};

// Bound of a save grant's trainer id (the RPC's bound too).
constexpr size_t kMaxTrainerBytes = 256;

const char* ChangeTypeName(Change::Type t);

std::string EncodeChange(const Change& c);
Result<Change> DecodeChange(std::string_view bytes);

// Shared with the snapshot encoding: the dataset part (globs and tasks,
// file paths deduplicated).
void EncodeDataset(const std::vector<std::string>& globs,
                   const std::vector<TaskDef>& tasks, ByteWriter* w);
Status DecodeDataset(ByteReader* r, std::vector<std::string>* globs,
                     std::vector<TaskDef>* tasks);

// Appends the CRC32C trailer; CheckAndStripCrc verifies and removes it.
void AppendCrc(std::string* bytes);
Status CheckAndStripCrc(std::string_view* bytes, const char* what);

}  // namespace fabps::master

#endif  // FABPS_MASTER_CHANGE_H_
