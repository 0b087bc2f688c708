// The master's control-plane service: task dispatch over a recordio dataset.
// Served by fabps-master (TNonblockingServer, framed binary protocol).
// Semantics in master/task_dispatcher.h; summary here for clients.
// A job with a token: every connection first does the fabps.Auth handshake
// of auth.thrift.

namespace cpp fabps.rpc.master
namespace py fabps_thrift.master

enum GetTaskResult {
  TASK = 1,           // `task` is set: read its chunks, then TaskFinished
  PASS_FINISHED = 2,  // the caller's pass is over; call with pass_id + 1
  NO_TASK_NOW = 3,    // tasks are pending elsewhere; ask again later
  ALL_FAILED = 4,     // every task has failed; the job cannot go on
}

enum ErrorCode {
  INVALID_ARGUMENT = 1,
  NOT_FOUND = 2,         // a dataset glob matches nothing
  CORRUPTION = 3,        // a dataset file failed validation
  FAILED_PRECONDITION = 4,  // e.g. a different dataset is already set
  UNAVAILABLE = 5,       // the coordination store could not record the change
  INTERNAL = 6,
}

exception MasterError {
  1: ErrorCode code,
  2: string message,
}

struct Chunk {
  1: string path,
  2: i64 offset,    // of the chunk header in the recordio file
  3: i32 records,   // the header's record count
}

struct Task {
  1: i64 id,
  2: i64 epoch,        // echo it in TaskFinished / TaskFailed
  3: i64 deadline_ms,  // wall clock, ms since the Unix epoch
  4: list<Chunk> chunks,
}

struct GetTaskReply {
  1: GetTaskResult result,
  2: i64 pass_id,            // the master's current pass
  3: optional Task task,  // when result == TASK
}

struct MasterStatus {
  1: bool has_dataset,
  2: list<string> globs,
  3: i64 pass_id,
  4: i64 num_tasks,
  5: i64 todo,
  6: i64 pending,
  7: i64 done,
  8: i64 failed,
  9: list<i64> failed_tasks,
  10: list<string> trainers,   // ids seen in GetTask
  11: double avg_task_ms,
  12: i64 task_timeout_ms,
}

service Master {
  // The first call wins; a later call with the same globs succeeds, one with
  // different globs fails with FAILED_PRECONDITION. Idempotent.
  void SetDataset(1: list<string> globs) throws (1: MasterError err),

  // Not idempotent (a retry may dispatch a second task; the first then
  // times out and is handed out again).
  GetTaskReply GetTask(1: i64 pass_id, 2: string trainer_id) throws (1: MasterError err),

  // true when recorded; false when ignored (stale epoch, not pending).
  // Idempotent: a retry of a recorded call returns false.
  bool TaskFinished(1: i64 task_id, 2: i64 epoch) throws (1: MasterError err),
  bool TaskFailed(1: i64 task_id, 2: i64 epoch) throws (1: MasterError err),

  // true: this trainer may save the model now; others are refused for
  // block_ms.
  bool RequestSaveModel(1: string trainer_id, 2: i64 block_ms) throws (1: MasterError err),

  MasterStatus Status() throws (1: MasterError err),
}
