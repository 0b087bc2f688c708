// TaskQueues: the master's dispatch state as a pure state machine, with no
// clock, I/O or locking of its own.
//
// Every task is in exactly one of four queues: todo (FIFO), pending
// (dispatched, with an epoch and a deadline), done and failed. The state
// changes only through Apply(Change), which validates the change against the
// current state (a Dispatch must take the head of todo with epoch + 1, a
// Finish must name a pending task and its current epoch, ...) and either
// applies all of it or nothing. Deciding *which* change to make is the
// caller's job (TaskDispatcher); replaying a journal is calling Apply on each
// record, so a validated replay reproduces the state exactly.
//
// EncodeSnapshot/DecodeSnapshot turn the whole state into bytes and back
// (checksummed, bounds-checked), for journal compaction.
//
// Thread safety: none; the owner serializes access.
#ifndef FABPS_MASTER_TASK_QUEUES_H_
#define FABPS_MASTER_TASK_QUEUES_H_

#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "master/change.h"

namespace fabps::master {

enum class Queue : uint8_t { kTodo = 0, kPending = 1, kDone = 2, kFailed = 3 };

struct TaskRuntime {
  Queue queue = Queue::kTodo;
  uint64_t epoch = 0;     // bumped by each Dispatch
  uint32_t failures = 0;  // failures and timeouts so far
  int64_t dispatched_ms = 0;
  int64_t deadline_ms = 0;  // while pending
};

class TaskQueues {
 public:
  bool has_dataset() const { return has_dataset_; }
  const std::vector<std::string>& globs() const { return globs_; }
  int64_t pass() const { return pass_; }
  size_t num_tasks() const { return defs_.size(); }
  size_t todo_size() const { return todo_.size(); }
  size_t pending_size() const { return by_deadline_.size(); }
  size_t done_size() const { return done_; }
  size_t failed_size() const { return failed_.size(); }
  const std::set<uint64_t>& failed_tasks() const { return failed_; }

  const TaskDef& def(uint64_t id) const { return defs_[id]; }
  const TaskRuntime& runtime(uint64_t id) const { return runtime_[id]; }
  bool valid_id(uint64_t id) const { return id < defs_.size(); }

  // The task the next Dispatch must take; false when todo is empty.
  bool NextTodo(uint64_t* id) const;
  // A pending task whose deadline is <= now_ms (the earliest); false if none.
  bool EarliestExpired(int64_t now_ms, uint64_t* id) const;
  // Moving average (EMA, weight 1/8 to the newest) of the dispatch-to-finish
  // durations seen; 0 before the first finish.
  double avg_duration_ms() const { return avg_duration_ms_; }
  uint64_t finished_count() const { return finished_count_; }

  // Validates `c` against the state and applies it; on error the state is
  // unchanged and the error (FailedPrecondition or InvalidArgument) says why.
  Status Apply(const Change& c);

  // The save election's grant (Change kSaveGrant): who holds it and until
  // when (ms, the master's clock); "" and 0 before the first.
  const std::string& save_holder() const { return save_holder_; }
  int64_t save_until_ms() const { return save_until_ms_; }

  std::string EncodeSnapshot() const;
  static Result<TaskQueues> DecodeSnapshot(std::string_view bytes);

 private:
  Status CheckPending(const Change& c) const;

  bool has_dataset_ = false;
  std::vector<std::string> globs_;
  std::vector<TaskDef> defs_;
  std::vector<TaskRuntime> runtime_;
  int64_t pass_ = 0;
  std::deque<uint64_t> todo_;
  std::set<std::pair<int64_t, uint64_t>>
      by_deadline_;  // pending: (deadline, id)
  size_t done_ = 0;
  std::set<uint64_t> failed_;
  double avg_duration_ms_ = 0;
  uint64_t finished_count_ = 0;
  std::string save_holder_;
  int64_t save_until_ms_ = 0;
};

}  // namespace fabps::master

#endif  // FABPS_MASTER_TASK_QUEUES_H_
