#include "master/task_dispatcher.h"

#include <algorithm>

#include "base/check.h"
#include "base/log.h"
#include "master/dataset.h"

namespace fabps::master {
namespace {
// Records and bytes per journal batch (StoreJournal::kMaxBatch; the bytes
// keep a batch well inside etcd's request limit; a single larger record
// still goes, alone, and the journal stores it in parts).
constexpr size_t kMaxBatchRecords = 64;
constexpr size_t kMaxBatchBytes = 256 << 10;

std::string JoinGlobs(const std::vector<std::string>& globs) {
  std::string out = "[";
  for (size_t i = 0; i < globs.size() && i < 4; ++i)
    out += (i ? ", " : "") + globs[i];
  if (globs.size() > 4)
    out += ", ... (" + std::to_string(globs.size()) + " globs)";
  return out + "]";
}

Status DatasetConflict(const std::vector<std::string>& have,
                       const std::vector<std::string>& asked) {
  return Status::FailedPrecondition(
      "the dataset is already set to " + JoinGlobs(have) +
      "; refusing the different dataset " + JoinGlobs(asked));
}

// Moves the next batch of records from `queue` into a vector.
std::vector<std::string> TakeBatch(std::deque<std::string>* queue) {
  std::vector<std::string> batch;
  size_t bytes = 0;
  while (!queue->empty() && batch.size() < kMaxBatchRecords &&
         (batch.empty() || bytes + queue->front().size() <= kMaxBatchBytes)) {
    bytes += queue->front().size();
    batch.push_back(std::move(queue->front()));
    queue->pop_front();
  }
  return batch;
}
constexpr size_t kMaxTrainersTracked = 100'000;
constexpr int64_t kMaxSaveBlockMs = 24 * 3600 * 1000;
}  // namespace

// Rebuilds the queues from the journal's snapshot and records, validating
// each record against the state before it.
static Result<TaskQueues> Replay(Journal* journal) {
  FABPS_ASSIGN_OR_RETURN(JournalContents contents, journal->Load());
  TaskQueues queues;
  if (!contents.snapshot.empty()) {
    auto q = TaskQueues::DecodeSnapshot(contents.snapshot);
    if (!q.ok()) return q.status().WithContext("master state");
    queues = std::move(q).value();
  }
  for (size_t i = 0; i < contents.changes.size(); ++i) {
    auto c = DecodeChange(contents.changes[i]);
    Status s = c.ok() ? queues.Apply(*c) : c.status();
    if (!s.ok()) {
      return Status::Corruption("master journal record " + std::to_string(i) +
                                " after the snapshot: " + s.ToString());
    }
  }
  if (!contents.snapshot.empty() || !contents.changes.empty()) {
    FABPS_LOG(INFO) << "master state loaded: pass " << queues.pass()
                    << ", todo " << queues.todo_size() << ", pending "
                    << queues.pending_size() << ", done " << queues.done_size()
                    << ", failed " << queues.failed_size() << " ("
                    << contents.changes.size() << " journal records replayed)";
  }
  return queues;
}

Result<std::unique_ptr<TaskDispatcher>> TaskDispatcher::Open(
    Journal* journal, Clock* clock, const DispatcherOptions& options) {
  if (options.chunks_per_task < 1 || options.task_timeout_ms < 1 ||
      options.task_failure_max < 0 || options.compact_every < 1) {
    return Status::InvalidArgument("dispatcher options out of range");
  }
  std::unique_ptr<TaskDispatcher> d(
      new TaskDispatcher(journal, clock, options));
  FABPS_ASSIGN_OR_RETURN(d->queues_, Replay(journal));
  return d;
}

void TaskDispatcher::StageLocked(const Change& c) {
  Status s = queues_.Apply(c);
  FABPS_CHECK_MSG(s.ok(), "a decided change did not apply: " << s.ToString());
  unwritten_.push_back(EncodeChange(c));
  ++staged_;
}

Status TaskDispatcher::FlushOneLocked() {
  std::vector<std::string> batch = TakeBatch(&unwritten_);
  Status s = journal_->AppendBatch(batch);
  if (!s.ok()) return s;
  durable_ += batch.size();
  return Status::OK();
}

Status TaskDispatcher::AwaitDurableLocked(Lock& l) {
  const uint64_t target = staged_;
  const uint64_t generation = generation_;
  while (durable_ < target) {
    if (generation_ != generation) {
      return broken_.ok() ? Status::Unavailable(
                                "master state was reloaded after a store error")
                          : broken_;
    }
    if (flushing_) {
      durable_cv_.wait(l);
      continue;
    }
    // This call writes the batch; others stage more meanwhile.
    flushing_ = true;
    std::vector<std::string> batch = TakeBatch(&unwritten_);
    l.unlock();
    Status s = journal_->AppendBatch(batch);
    l.lock();
    flushing_ = false;
    if (s.ok()) {
      durable_ += batch.size();
      MaybeCompactLocked();
    } else {
      FABPS_LOG(WARNING) << "journal write failed; the state will be reloaded: "
                         << s.ToString();
      broken_ = s;
      ++generation_;
    }
    durable_cv_.notify_all();
  }
  return Status::OK();
}

void TaskDispatcher::MaybeCompactLocked() {
  if (!broken_.ok() ||
      journal_->changes_since_compaction() + unwritten_.size() <
          options_.compact_every) {
    return;
  }
  // Holding mu_, nothing new is staged: write what is queued, and the
  // snapshot then covers exactly the journal.
  while (!unwritten_.empty()) {
    Status s = FlushOneLocked();
    if (!s.ok()) {
      FABPS_LOG(WARNING) << "journal write failed; the state will be reloaded: "
                         << s.ToString();
      broken_ = s;
      ++generation_;
      return;
    }
  }
  Status cs = journal_->Compact(queues_.EncodeSnapshot());
  if (!cs.ok()) {
    FABPS_LOG(WARNING) << "journal compaction failed (will retry): "
                       << cs.ToString();
  }
}

Status TaskDispatcher::RecoverLocked(Lock& l) {
  if (broken_.ok()) return Status::OK();
  while (flushing_) durable_cv_.wait(l);
  auto q = Replay(journal_);
  if (!q.ok()) {
    return Status::Unavailable(
        "master state must be reloaded after a store error (" +
        broken_.ToString() +
        ") and reloading failed: " + q.status().ToString());
  }
  queues_ = std::move(q).value();
  unwritten_.clear();
  durable_ = staged_;
  broken_ = Status::OK();
  FABPS_LOG(INFO) << "master state reloaded from the journal";
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
  StageLocked(c);
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
  StageLocked(c);
  if (timed_out) timeouts_++;
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
  Lock l(mu_);
  FABPS_RETURN_IF_ERROR(RecoverLocked(l));
  FABPS_RETURN_IF_ERROR(ExpireLocked(clock_->NowMs()));
  return AwaitDurableLocked(l);
}

Status TaskDispatcher::SetDataset(const std::vector<std::string>& globs) {
  {
    Lock l(mu_);
    FABPS_RETURN_IF_ERROR(RecoverLocked(l));
    if (queues_.has_dataset()) {
      FABPS_RETURN_IF_ERROR(AwaitDurableLocked(l));
      if (queues_.globs() == globs) return Status::OK();
      return DatasetConflict(queues_.globs(), globs);
    }
  }
  // Indexing reads files: done without the lock, then re-checked.
  FABPS_ASSIGN_OR_RETURN(auto tasks,
                         BuildTasks(globs, options_.chunks_per_task));
  Lock l(mu_);
  FABPS_RETURN_IF_ERROR(RecoverLocked(l));
  if (!queues_.has_dataset()) {
    Change c;
    c.type = Change::Type::kSetDataset;
    c.globs = globs;
    c.tasks = std::move(tasks);
    StageLocked(c);
    FABPS_LOG(INFO) << "dataset set: " << queues_.num_tasks() << " tasks";
  }
  FABPS_RETURN_IF_ERROR(AwaitDurableLocked(l));
  if (queues_.globs() == globs) return Status::OK();
  return DatasetConflict(queues_.globs(), globs);
}

Result<GetTaskReply> TaskDispatcher::GetTask(int64_t pass,
                                             const std::string& trainer_id) {
  if (trainer_id.size() > kMaxTrainerBytes) {
    return Status::InvalidArgument("trainer id too long");
  }
  Lock l(mu_);
  FABPS_RETURN_IF_ERROR(RecoverLocked(l));
  int64_t now = clock_->NowMs();
  if (!trainer_id.empty() &&
      (trainers_.size() < kMaxTrainersTracked || trainers_.count(trainer_id))) {
    trainers_[trainer_id] = now;
  }
  if (!queues_.has_dataset()) {
    FABPS_RETURN_IF_ERROR(
        AwaitDurableLocked(l));  // a SetDataset may be in flight
    if (!queues_.has_dataset())
      return Status::FailedPrecondition("no dataset has been set");
  }
  FABPS_RETURN_IF_ERROR(ExpireLocked(now));
  GetTaskReply reply;
  reply.pass = queues_.pass();
  uint64_t id;
  if (pass < queues_.pass()) {
    reply.result = GetTaskResult::kPassFinished;
  } else if (pass > queues_.pass() ||
             (!queues_.NextTodo(&id) && queues_.pending_size() > 0)) {
    reply.result = GetTaskResult::kNoTaskNow;
  } else if (!queues_.NextTodo(&id)) {
    // todo and pending empty with no done task: the pass cannot end.
    reply.result = GetTaskResult::kAllFailed;
  } else {
    Change c;
    c.type = Change::Type::kDispatch;
    c.task_id = id;
    c.epoch = queues_.runtime(id).epoch + 1;
    c.time_ms = now;
    c.deadline_ms = now + TimeoutLocked();
    StageLocked(c);
    reply.result = GetTaskResult::kTask;
    reply.task.id = id;
    reply.task.epoch = c.epoch;
    reply.task.deadline_ms = c.deadline_ms;
    reply.task.chunks = queues_.def(id).chunks;
  }
  FABPS_RETURN_IF_ERROR(AwaitDurableLocked(l));
  return reply;
}

Result<bool> TaskDispatcher::TaskFinished(uint64_t task_id, uint64_t epoch) {
  Lock l(mu_);
  FABPS_RETURN_IF_ERROR(RecoverLocked(l));
  bool applied = false;
  if (queues_.valid_id(task_id) &&
      queues_.runtime(task_id).queue == Queue::kPending &&
      queues_.runtime(task_id).epoch == epoch) {
    Change c;
    c.type = Change::Type::kFinish;
    c.task_id = task_id;
    c.epoch = epoch;
    c.time_ms = clock_->NowMs();
    StageLocked(c);
    FABPS_RETURN_IF_ERROR(MaybeEndPassLocked());
    applied = true;
  }
  FABPS_RETURN_IF_ERROR(AwaitDurableLocked(l));
  return applied;
}

Result<bool> TaskDispatcher::TaskFailed(uint64_t task_id, uint64_t epoch) {
  Lock l(mu_);
  FABPS_RETURN_IF_ERROR(RecoverLocked(l));
  bool applied = false;
  if (queues_.valid_id(task_id) &&
      queues_.runtime(task_id).queue == Queue::kPending &&
      queues_.runtime(task_id).epoch == epoch) {
    FABPS_RETURN_IF_ERROR(FailLocked(task_id, false));
    applied = true;
  }
  FABPS_RETURN_IF_ERROR(AwaitDurableLocked(l));
  return applied;
}

Result<bool> TaskDispatcher::RequestSaveModel(const std::string& trainer_id,
                                              int64_t block_ms) {
  if (trainer_id.empty() || trainer_id.size() > kMaxTrainerBytes) {
    return Status::InvalidArgument("trainer id must have 1 to 256 bytes");
  }
  if (block_ms < 0 || block_ms > kMaxSaveBlockMs) {
    return Status::InvalidArgument("block_ms must be in [0, 86400000]");
  }
  Lock l(mu_);
  FABPS_RETURN_IF_ERROR(RecoverLocked(l));
  int64_t now = clock_->NowMs();
  if (now < queues_.save_until_ms() && queues_.save_holder() != trainer_id) {
    return false;
  }
  // Journaled like every change: a master that takes over keeps the grant.
  Change c;
  c.type = Change::Type::kSaveGrant;
  c.trainer = trainer_id;
  c.deadline_ms = now + block_ms;
  StageLocked(c);
  FABPS_RETURN_IF_ERROR(AwaitDurableLocked(l));
  return true;
}

DispatcherStatus TaskDispatcher::GetStatus() {
  Lock l(mu_);
  Status s = RecoverLocked(l);
  if (s.ok()) s = ExpireLocked(clock_->NowMs());
  if (s.ok()) s = AwaitDurableLocked(l);
  if (!s.ok()) {
    FABPS_LOG(WARNING) << "status: " << s.ToString();
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
  st.timeouts = timeouts_;
  return st;
}

}  // namespace fabps::master
