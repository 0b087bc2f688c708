// TaskDispatcher: the master's service logic, independent of RPC.
//
// It owns the TaskQueues, decides each change (which task to hand out, when
// a task has timed out, when a pass ends), records the change in the Journal
// and only then applies it and answers: nothing is acknowledged that is not
// durable. A dispatcher opened on an existing journal resumes its state
// exactly, pending tasks and their deadlines included.
//
// Semantics (see also master.thrift):
//   - SetDataset: the first call wins; a later call with the same globs is
//     OK, one with different globs is FailedPrecondition.
//   - GetTask(pass): a task (todo -> pending, epoch + 1, deadline now +
//     timeout); kPassFinished when `pass` is over (the caller's pass is
//     behind the master's); kNoTaskNow when todo is empty but tasks are
//     pending (or the caller is ahead); kAllFailed when every task failed.
//   - TaskFinished / TaskFailed with a stale epoch or for a task that is not
//     pending are ignored (they return false).
//   - A failed or timed-out task returns to todo with its failure count up;
//     past `task_failure_max` failures it goes to failed (for good).
//   - When todo and pending are empty the pass ends: done tasks move back to
//     todo and the pass number goes up by one.
//   - RequestSaveModel grants one trainer at a time for `block_ms`; the
//     grant is journaled (Change kSaveGrant), so a master that takes over
//     keeps it.
//
// Group commit: a call decides and applies its changes in memory under the
// mutex, queues their records, and then waits until they are durable; one
// of the waiting calls writes everything queued so far as one journal batch
// (one store write) while the others wait, so N concurrent calls cost about
// one store round trip, not N. Every answer waits until the state it was
// computed from is durable, so nothing is acknowledged that a restarted
// master would not know. If a batch fails, the calls waiting on it fail and
// the state is reloaded from the journal before the next call is served.
// Compaction holds the mutex, writes what is queued, then the snapshot.
//
// Thread safety: every method may be called from any thread.
// The Journal and Clock must outlive the dispatcher.
#ifndef FABPS_MASTER_TASK_DISPATCHER_H_
#define FABPS_MASTER_TASK_DISPATCHER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "master/clock.h"
#include "master/journal.h"
#include "master/task_queues.h"

namespace fabps::master {

struct DispatcherOptions {
  int chunks_per_task = 4;
  int64_t task_timeout_ms = 60'000;
  int task_failure_max = 3;
  // When set, after the first finished task the timeout is
  // max(adaptive_min_ms, adaptive_factor * moving average of durations).
  bool adaptive_timeout = false;
  double adaptive_factor = 3.0;
  int64_t adaptive_min_ms = 1'000;
  // Compact the journal into a snapshot after this many changes.
  size_t compact_every = 1'000;
};

enum class GetTaskResult {
  kTask = 1,
  kPassFinished = 2,
  kNoTaskNow = 3,
  kAllFailed = 4
};

struct DispatchedTask {
  uint64_t id = 0;
  uint64_t epoch = 0;
  int64_t deadline_ms = 0;  // wall clock
  std::vector<recordio::ChunkRef> chunks;
};

struct GetTaskReply {
  GetTaskResult result = GetTaskResult::kNoTaskNow;
  int64_t pass = 0;     // the master's current pass
  DispatchedTask task;  // for kTask
};

struct DispatcherStatus {
  bool has_dataset = false;
  std::vector<std::string> globs;
  int64_t pass = 0;
  uint64_t num_tasks = 0;
  uint64_t todo = 0, pending = 0, done = 0, failed = 0;
  std::vector<uint64_t> failed_tasks;
  std::vector<std::string> trainers;  // ids seen, sorted
  double avg_task_ms = 0;
  int64_t task_timeout_ms = 0;  // what the next dispatch would use
  uint64_t timeouts = 0;        // tasks that timed out since this start
};

class TaskDispatcher {
 public:
  // Loads and replays `journal`. Corruption when a stored record fails
  // validation or does not apply to the state before it.
  static Result<std::unique_ptr<TaskDispatcher>> Open(
      Journal* journal, Clock* clock, const DispatcherOptions& options);

  Status SetDataset(const std::vector<std::string>& globs);
  Result<GetTaskReply> GetTask(int64_t pass, const std::string& trainer_id);
  // true when applied, false when ignored (stale epoch, not pending).
  Result<bool> TaskFinished(uint64_t task_id, uint64_t epoch);
  Result<bool> TaskFailed(uint64_t task_id, uint64_t epoch);
  // true when `trainer_id` may save the model now.
  Result<bool> RequestSaveModel(const std::string& trainer_id,
                                int64_t block_ms);
  DispatcherStatus GetStatus();
  // Returns timed-out pending tasks to todo (or failed); the daemon calls it
  // periodically, GetTask and GetStatus call it too.
  Status ExpireTimedOut();

 private:
  TaskDispatcher(Journal* journal, Clock* clock,
                 const DispatcherOptions& options)
      : journal_(journal), clock_(clock), options_(options) {}
  using Lock = std::unique_lock<std::mutex>;
  // Applies `c` in memory and queues its record.
  void StageLocked(const Change& c);
  // Waits until every change staged so far is durable, writing batches.
  Status AwaitDurableLocked(Lock& l);
  // Writes up to one batch of queued records with mu_ held.
  Status FlushOneLocked();
  void MaybeCompactLocked();
  // After a failed batch: reload the state from the journal.
  Status RecoverLocked(Lock& l);
  Status ExpireLocked(int64_t now_ms);
  Status FailLocked(uint64_t id, bool timed_out);
  Status MaybeEndPassLocked();
  int64_t TimeoutLocked() const;

  std::mutex mu_;
  std::condition_variable durable_cv_;
  Journal* journal_;
  Clock* clock_;
  const DispatcherOptions options_;
  TaskQueues queues_;                        // guarded by mu_
  std::map<std::string, int64_t> trainers_;  // id -> last seen, guarded by mu_
  uint64_t timeouts_ = 0;                    // guarded by mu_
  // Group commit, guarded by mu_: records staged but not yet written, the
  // counts of changes staged and made durable (they only grow), whether a
  // batch write is in progress, and the error of a failed batch (the state
  // must be reloaded), with a generation bumped at each failure.
  std::deque<std::string> unwritten_;
  uint64_t staged_ = 0;
  uint64_t durable_ = 0;
  bool flushing_ = false;
  Status broken_;
  uint64_t generation_ = 0;
};

}  // namespace fabps::master

#endif  // FABPS_MASTER_TASK_DISPATCHER_H_
