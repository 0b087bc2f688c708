#include "master/task_dispatcher.h"

#include <algorithm>

#include "base/check.h"
#include "base/log.h"
#include "master/dataset.h"

namespace fabps::master {
namespace {
constexpr size_t kMaxTrainerIdBytes = 256;
constexpr size_t kMaxTrainersTracked = 100'000;
constexpr int64_t kMaxSaveBlockMs = 24 * 3600 * 1000;
}  // namespace

Result<std::unique_ptr<TaskDispatcher>> TaskDispatcher::Open(
    Journal* journal, Clock* clock, const DispatcherOptions& options) {
  if (options.chunks_per_task < 1 || options.task_timeout_ms < 1 ||
      options.task_failure_max < 0 || options.compact_every < 1) {
    return Status::InvalidArgument("dispatcher options out of range");
  }
  std::unique_ptr<TaskDispatcher> d(
      new TaskDispatcher(journal, clock, options));
  FABPS_ASSIGN_OR_RETURN(JournalContents contents, journal->Load());
  if (!contents.snapshot.empty()) {
    auto q = TaskQueues::DecodeSnapshot(contents.snapshot);
    if (!q.ok()) return q.status().WithContext("master state");
    d->queues_ = std::move(q).value();
  }
  for (size_t i = 0; i < contents.changes.size(); ++i) {
    auto c = DecodeChange(contents.changes[i]);
    Status s = c.ok() ? d->queues_.Apply(*c) : c.status();
    if (!s.ok()) {
      return Status::Corruption("master journal record " + std::to_string(i) +
                                " after the snapshot: " + s.ToString());
    }
  }
  if (!contents.snapshot.empty() || !contents.changes.empty()) {
    FABPS_LOG(INFO) << "master state resumed: pass " << d->queues_.pass()
                    << ", todo " << d->queues_.todo_size() << ", pending "
                    << d->queues_.pending_size() << ", done "
                    << d->queues_.done_size() << ", failed "
                    << d->queues_.failed_size() << " ("
                    << contents.changes.size() << " journal records replayed)";
  }
  return d;
}

Status TaskDispatcher::CommitLocked(const Change& c) {
  FABPS_RETURN_IF_ERROR(journal_->Append(EncodeChange(c)));
  Status s = queues_.Apply(c);
  FABPS_CHECK_MSG(s.ok(), "a decided change did not apply: " << s.ToString());
  if (journal_->changes_since_compaction() >= options_.compact_every) {
    Status cs = journal_->Compact(queues_.EncodeSnapshot());
    if (!cs.ok()) {
      FABPS_LOG(WARNING) << "journal compaction failed (will retry): "
                         << cs.ToString();
    }
  }
  return Status::OK();
}

int64_t TaskDispatcher::TimeoutLocked() const {
  if (options_.adaptive_timeout && queues_.finished_count() > 0) {
    auto t = static_cast<int64_t>(options_.adaptive_factor *
                                  queues_.avg_duration_ms());
    return std::max(options_.adaptive_min_ms, t);
  }
  return options_.task_timeout_ms;
}

Status TaskDispatcher::MaybeEndPassLocked() {
  if (queues_.todo_size() != 0 || queues_.pending_size() != 0 ||
      queues_.done_size() == 0) {
    return Status::OK();
  }
  Change c;
  c.type = Change::Type::kNewPass;
  c.pass = queues_.pass() + 1;
  FABPS_RETURN_IF_ERROR(CommitLocked(c));
  FABPS_LOG(INFO) << "pass " << c.pass - 1 << " finished; pass " << c.pass
                  << " starts";
  return Status::OK();
}

Status TaskDispatcher::FailLocked(uint64_t id, bool timed_out) {
  const TaskRuntime& rt = queues_.runtime(id);
  Change c;
  c.type = Change::Type::kFail;
  c.task_id = id;
  c.epoch = rt.epoch;
  c.timed_out = timed_out;
  c.to_failed =
      static_cast<int64_t>(rt.failures) + 1 > options_.task_failure_max;
  FABPS_RETURN_IF_ERROR(CommitLocked(c));
  FABPS_LOG(INFO) << "task " << id << " epoch " << c.epoch
                  << (timed_out ? " timed out" : " failed") << "; "
                  << (c.to_failed ? "moved to failed" : "back to todo");
  return MaybeEndPassLocked();
}

Status TaskDispatcher::ExpireLocked(int64_t now_ms) {
  uint64_t id;
  while (queues_.EarliestExpired(now_ms, &id))
    FABPS_RETURN_IF_ERROR(FailLocked(id, true));
  return Status::OK();
}

Status TaskDispatcher::ExpireTimedOut() {
  std::lock_guard<std::mutex> l(mu_);
  return ExpireLocked(clock_->NowMs());
}

Status TaskDispatcher::SetDataset(const std::vector<std::string>& globs) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (queues_.has_dataset()) {
      if (queues_.globs() == globs) return Status::OK();
      return Status::FailedPrecondition(
          "the dataset is already set to a different set of globs");
    }
  }
  // Indexing reads files: done without the lock, then re-checked.
  FABPS_ASSIGN_OR_RETURN(auto tasks,
                         BuildTasks(globs, options_.chunks_per_task));
  std::lock_guard<std::mutex> l(mu_);
  if (queues_.has_dataset()) {
    if (queues_.globs() == globs) return Status::OK();
    return Status::FailedPrecondition(
        "the dataset is already set to a different set of globs");
  }
  Change c;
  c.type = Change::Type::kSetDataset;
  c.globs = globs;
  c.tasks = std::move(tasks);
  FABPS_RETURN_IF_ERROR(CommitLocked(c));
  FABPS_LOG(INFO) << "dataset set: " << queues_.num_tasks() << " tasks";
  return Status::OK();
}

Result<GetTaskReply> TaskDispatcher::GetTask(int64_t pass,
                                             const std::string& trainer_id) {
  if (trainer_id.size() > kMaxTrainerIdBytes)
    return Status::InvalidArgument("trainer id too long");
  std::lock_guard<std::mutex> l(mu_);
  int64_t now = clock_->NowMs();
  if (!trainer_id.empty() &&
      (trainers_.size() < kMaxTrainersTracked || trainers_.count(trainer_id))) {
    trainers_[trainer_id] = now;
  }
  if (!queues_.has_dataset())
    return Status::FailedPrecondition("no dataset has been set");
  FABPS_RETURN_IF_ERROR(ExpireLocked(now));
  GetTaskReply reply;
  reply.pass = queues_.pass();
  if (pass < queues_.pass()) {
    reply.result = GetTaskResult::kPassFinished;
    return reply;
  }
  uint64_t id;
  if (pass > queues_.pass() ||
      (!queues_.NextTodo(&id) && queues_.pending_size() > 0)) {
    reply.result = GetTaskResult::kNoTaskNow;
    return reply;
  }
  if (!queues_.NextTodo(&id)) {
    // todo and pending empty with no done task: the pass cannot end.
    reply.result = GetTaskResult::kAllFailed;
    return reply;
  }
  Change c;
  c.type = Change::Type::kDispatch;
  c.task_id = id;
  c.epoch = queues_.runtime(id).epoch + 1;
  c.time_ms = now;
  c.deadline_ms = now + TimeoutLocked();
  FABPS_RETURN_IF_ERROR(CommitLocked(c));
  reply.result = GetTaskResult::kTask;
  reply.task.id = id;
  reply.task.epoch = c.epoch;
  reply.task.deadline_ms = c.deadline_ms;
  reply.task.chunks = queues_.def(id).chunks;
  return reply;
}

Result<bool> TaskDispatcher::TaskFinished(uint64_t task_id, uint64_t epoch) {
  std::lock_guard<std::mutex> l(mu_);
  if (!queues_.valid_id(task_id)) return false;
  const TaskRuntime& rt = queues_.runtime(task_id);
  if (rt.queue != Queue::kPending || rt.epoch != epoch) return false;
  Change c;
  c.type = Change::Type::kFinish;
  c.task_id = task_id;
  c.epoch = epoch;
  c.time_ms = clock_->NowMs();
  FABPS_RETURN_IF_ERROR(CommitLocked(c));
  FABPS_RETURN_IF_ERROR(MaybeEndPassLocked());
  return true;
}

Result<bool> TaskDispatcher::TaskFailed(uint64_t task_id, uint64_t epoch) {
  std::lock_guard<std::mutex> l(mu_);
  if (!queues_.valid_id(task_id)) return false;
  const TaskRuntime& rt = queues_.runtime(task_id);
  if (rt.queue != Queue::kPending || rt.epoch != epoch) return false;
  FABPS_RETURN_IF_ERROR(FailLocked(task_id, false));
  return true;
}

Result<bool> TaskDispatcher::RequestSaveModel(const std::string& trainer_id,
                                              int64_t block_ms) {
  if (trainer_id.empty() || trainer_id.size() > kMaxTrainerIdBytes) {
    return Status::InvalidArgument("trainer id must have 1 to 256 bytes");
  }
  if (block_ms < 0 || block_ms > kMaxSaveBlockMs) {
    return Status::InvalidArgument("block_ms must be in [0, 86400000]");
  }
  std::lock_guard<std::mutex> l(mu_);
  int64_t now = clock_->NowMs();
  if (now < save_until_ms_ && save_holder_ != trainer_id) return false;
  save_holder_ = trainer_id;
  save_until_ms_ = now + block_ms;
  return true;
}

DispatcherStatus TaskDispatcher::GetStatus() {
  std::lock_guard<std::mutex> l(mu_);
  Status s = ExpireLocked(clock_->NowMs());
  if (!s.ok()) {
    FABPS_LOG(WARNING) << "expiring timed-out tasks: " << s.ToString();
  }
  DispatcherStatus st;
  st.has_dataset = queues_.has_dataset();
  st.globs = queues_.globs();
  st.pass = queues_.pass();
  st.num_tasks = queues_.num_tasks();
  st.todo = queues_.todo_size();
  st.pending = queues_.pending_size();
  st.done = queues_.done_size();
  st.failed = queues_.failed_size();
  st.failed_tasks.assign(queues_.failed_tasks().begin(),
                         queues_.failed_tasks().end());
  for (const auto& [id, seen] : trainers_) st.trainers.push_back(id);
  st.avg_task_ms = queues_.avg_duration_ms();
  st.task_timeout_ms = TimeoutLocked();
  return st;
}

}  // namespace fabps::master
