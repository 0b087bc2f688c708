#include "master/task_queues.h"

#include <cstring>

#include "base/little_endian.h"

namespace fabps::master {
namespace {

constexpr char kSnapshotMagic[4] = {'F', 'M', 'S', '1'};

Status Reject(const Change& c, const std::string& why) {
  return Status::FailedPrecondition(std::string(ChangeTypeName(c.type)) +
                                    " of task " + std::to_string(c.task_id) +
                                    ": " + why);
}

}  // namespace

bool TaskQueues::NextTodo(uint64_t* id) const {
  if (todo_.empty()) return false;
  *id = todo_.front();
  return true;
}

bool TaskQueues::EarliestExpired(int64_t now_ms, uint64_t* id) const {
  if (by_deadline_.empty() || by_deadline_.begin()->first > now_ms)
    return false;
  *id = by_deadline_.begin()->second;
  return true;
}

Status TaskQueues::CheckPending(const Change& c) const {
  if (!has_dataset_) return Reject(c, "no dataset");
  if (!valid_id(c.task_id)) return Reject(c, "no such task");
  const TaskRuntime& rt = runtime_[c.task_id];
  if (rt.queue != Queue::kPending) return Reject(c, "not pending");
  if (rt.epoch != c.epoch) {
    return Reject(c, "epoch " + std::to_string(c.epoch) +
                         " is not the current " + std::to_string(rt.epoch));
  }
  return Status::OK();
}

Status TaskQueues::Apply(const Change& c) {
  switch (c.type) {
    case Change::Type::kSetDataset: {
      if (has_dataset_) return Reject(c, "dataset already set");
      if (c.tasks.empty()) return Reject(c, "empty dataset");
      has_dataset_ = true;
      globs_ = c.globs;
      defs_ = c.tasks;
      runtime_.assign(defs_.size(), TaskRuntime{});
      for (uint64_t i = 0; i < defs_.size(); ++i) todo_.push_back(i);
      return Status::OK();
    }
    case Change::Type::kDispatch: {
      uint64_t head;
      if (!NextTodo(&head)) return Reject(c, "todo is empty");
      if (head != c.task_id) return Reject(c, "not the head of todo");
      TaskRuntime& rt = runtime_[c.task_id];
      if (c.epoch != rt.epoch + 1)
        return Reject(c, "epoch must be the old one + 1");
      todo_.pop_front();
      rt.queue = Queue::kPending;
      rt.epoch = c.epoch;
      rt.dispatched_ms = c.time_ms;
      rt.deadline_ms = c.deadline_ms;
      by_deadline_.emplace(rt.deadline_ms, c.task_id);
      return Status::OK();
    }
    case Change::Type::kFinish: {
      FABPS_RETURN_IF_ERROR(CheckPending(c));
      TaskRuntime& rt = runtime_[c.task_id];
      by_deadline_.erase({rt.deadline_ms, c.task_id});
      rt.queue = Queue::kDone;
      ++done_;
      // In double: both times come from the journal, and their difference
      // may not fit an int64 (a damaged or foreign record).
      double d = static_cast<double>(c.time_ms) -
                 static_cast<double>(rt.dispatched_ms);
      if (d < 0) d = 0;
      avg_duration_ms_ = finished_count_ == 0
                             ? d
                             : avg_duration_ms_ + (d - avg_duration_ms_) / 8;
      ++finished_count_;
      return Status::OK();
    }
    case Change::Type::kFail: {
      FABPS_RETURN_IF_ERROR(CheckPending(c));
      TaskRuntime& rt = runtime_[c.task_id];
      by_deadline_.erase({rt.deadline_ms, c.task_id});
      ++rt.failures;
      if (c.to_failed) {
        rt.queue = Queue::kFailed;
        failed_.insert(c.task_id);
      } else {
        rt.queue = Queue::kTodo;
        todo_.push_back(c.task_id);
      }
      return Status::OK();
    }
    case Change::Type::kNewPass: {
      if (!has_dataset_) return Reject(c, "no dataset");
      if (!todo_.empty() || !by_deadline_.empty())
        return Reject(c, "pass not over");
      if (done_ == 0) return Reject(c, "no task done");
      if (c.pass != pass_ + 1) return Reject(c, "pass must be the old one + 1");
      pass_ = c.pass;
      for (uint64_t i = 0; i < defs_.size(); ++i) {
        if (runtime_[i].queue == Queue::kDone) {
          runtime_[i].queue = Queue::kTodo;
          todo_.push_back(i);
        }
      }
      done_ = 0;
      return Status::OK();
    }
    case Change::Type::kSaveGrant: {
      if (c.trainer.empty()) return Reject(c, "no trainer");
      save_holder_ = c.trainer;
      save_until_ms_ = c.deadline_ms;
      return Status::OK();
    }
  }
  return Status::InvalidArgument("unknown change type");
}

std::string TaskQueues::EncodeSnapshot() const {
  std::string out(kSnapshotMagic, sizeof(kSnapshotMagic));
  ByteWriter w(&out);
  w.U8(has_dataset_ ? 1 : 0);
  EncodeDataset(globs_, defs_, &w);
  w.I64(pass_);
  w.U64(finished_count_);
  std::string avg(sizeof(double), '\0');
  std::memcpy(avg.data(), &avg_duration_ms_, sizeof(double));
  w.Str(avg);
  for (const TaskRuntime& rt : runtime_) {
    w.U8(static_cast<uint8_t>(rt.queue));
    w.U64(rt.epoch);
    w.U32(rt.failures);
    w.I64(rt.dispatched_ms);
    w.I64(rt.deadline_ms);
  }
  w.U32(static_cast<uint32_t>(todo_.size()));
  for (uint64_t id : todo_) w.U64(id);
  // Appended later: snapshots without it decode with no grant.
  if (!save_holder_.empty()) {
    w.Str(save_holder_);
    w.I64(save_until_ms_);
  }
  AppendCrc(&out);
  return out;
}

Result<TaskQueues> TaskQueues::DecodeSnapshot(std::string_view bytes) {
  FABPS_RETURN_IF_ERROR(CheckAndStripCrc(&bytes, "snapshot"));
  auto bad = [](const char* what) {
    return Status::Corruption(std::string("snapshot: ") + what);
  };
  if (bytes.size() < 4 || std::memcmp(bytes.data(), kSnapshotMagic, 4) != 0) {
    return bad("bad magic");
  }
  ByteReader r(bytes.substr(4));
  TaskQueues q;
  uint8_t has;
  if (!r.U8(&has) || has > 1) return bad("flags");
  q.has_dataset_ = has == 1;
  FABPS_RETURN_IF_ERROR(DecodeDataset(&r, &q.globs_, &q.defs_));
  if (q.has_dataset_ == q.defs_.empty()) return bad("dataset flag");
  std::string avg;
  if (!r.I64(&q.pass_) || q.pass_ < 0 || !r.U64(&q.finished_count_) ||
      !r.Str(&avg, sizeof(double)) || avg.size() != sizeof(double)) {
    return bad("counters");
  }
  std::memcpy(&q.avg_duration_ms_, avg.data(), sizeof(double));
  q.runtime_.resize(q.defs_.size());
  size_t todo_in_runtime = 0;
  for (uint64_t i = 0; i < q.runtime_.size(); ++i) {
    TaskRuntime& rt = q.runtime_[i];
    uint8_t queue;
    if (!r.U8(&queue) || queue > 3 || !r.U64(&rt.epoch) ||
        !r.U32(&rt.failures) || !r.I64(&rt.dispatched_ms) ||
        !r.I64(&rt.deadline_ms)) {
      return bad("task state");
    }
    rt.queue = static_cast<Queue>(queue);
    switch (rt.queue) {
      case Queue::kTodo:
        ++todo_in_runtime;
        break;
      case Queue::kPending:
        q.by_deadline_.emplace(rt.deadline_ms, i);
        break;
      case Queue::kDone:
        ++q.done_;
        break;
      case Queue::kFailed:
        q.failed_.insert(i);
        break;
    }
  }
  uint32_t ntodo;
  if (!r.U32(&ntodo) || ntodo != todo_in_runtime) return bad("todo count");
  std::vector<bool> seen(q.defs_.size(), false);
  for (uint32_t i = 0; i < ntodo; ++i) {
    uint64_t id;
    if (!r.U64(&id) || id >= q.defs_.size() ||
        q.runtime_[id].queue != Queue::kTodo || seen[id]) {
      return bad("todo entry");
    }
    seen[id] = true;
    q.todo_.push_back(id);
  }
  if (r.left() != 0 && (!r.Str(&q.save_holder_, kMaxTrainerBytes) ||
                        q.save_holder_.empty() || !r.I64(&q.save_until_ms_))) {
    return bad("save grant");
  }
  if (r.left() != 0) return bad("trailing bytes");
  return q;
}

}  // namespace fabps::master
