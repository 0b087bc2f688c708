#include "master/master_service.h"

namespace fabps::master {
namespace {

namespace gen = ::fabps::rpc::master;

[[noreturn]] void Throw(const ::fabps::Status& s) {
  gen::MasterError err;
  switch (s.code()) {
    case ::fabps::Status::Code::kInvalidArgument:
      err.code = gen::ErrorCode::INVALID_ARGUMENT;
      break;
    case ::fabps::Status::Code::kNotFound:
      err.code = gen::ErrorCode::NOT_FOUND;
      break;
    case ::fabps::Status::Code::kCorruption:
      err.code = gen::ErrorCode::CORRUPTION;
      break;
    case ::fabps::Status::Code::kFailedPrecondition:
      err.code = gen::ErrorCode::FAILED_PRECONDITION;
      break;
    case ::fabps::Status::Code::kUnavailable:
    case ::fabps::Status::Code::kTimedOut:
    case ::fabps::Status::Code::kIOError:
      err.code = gen::ErrorCode::UNAVAILABLE;
      break;
    default:
      err.code = gen::ErrorCode::INTERNAL;
      break;
  }
  err.message = s.message();
  throw err;
}

template <typename T>
T Check(Result<T> r) {
  if (!r.ok()) Throw(r.status());
  return std::move(r).value();
}

}  // namespace

void MasterService::SetDataset(const std::vector<std::string>& globs) {
  ::fabps::Status s = d_->SetDataset(globs);
  if (!s.ok()) Throw(s);
}

void MasterService::GetTask(gen::GetTaskReply& reply, int64_t pass_id,
                            const std::string& trainer_id) {
  GetTaskReply r = Check(d_->GetTask(pass_id, trainer_id));
  reply.result = static_cast<gen::GetTaskResult::type>(r.result);
  reply.pass_id = r.pass;
  if (r.result == GetTaskResult::kTask) {
    gen::Task t;
    t.id = static_cast<int64_t>(r.task.id);
    t.epoch = static_cast<int64_t>(r.task.epoch);
    t.deadline_ms = r.task.deadline_ms;
    for (const auto& c : r.task.chunks) {
      gen::Chunk gc;
      gc.path = c.path;
      gc.offset = static_cast<int64_t>(c.offset);
      gc.records = static_cast<int32_t>(c.records);
      t.chunks.push_back(std::move(gc));
    }
    reply.__set_task(std::move(t));
  }
}

bool MasterService::TaskFinished(int64_t task_id, int64_t epoch) {
  if (task_id < 0 || epoch < 0) return false;
  return Check(d_->TaskFinished(static_cast<uint64_t>(task_id),
                                static_cast<uint64_t>(epoch)));
}

bool MasterService::TaskFailed(int64_t task_id, int64_t epoch) {
  if (task_id < 0 || epoch < 0) return false;
  return Check(d_->TaskFailed(static_cast<uint64_t>(task_id),
                              static_cast<uint64_t>(epoch)));
}

bool MasterService::RequestSaveModel(const std::string& trainer_id,
                                     int64_t block_ms) {
  return Check(d_->RequestSaveModel(trainer_id, block_ms));
}

void MasterService::Status(gen::MasterStatus& out) {
  DispatcherStatus s = d_->GetStatus();
  out.has_dataset = s.has_dataset;
  out.globs = s.globs;
  out.pass_id = s.pass;
  out.num_tasks = static_cast<int64_t>(s.num_tasks);
  out.todo = static_cast<int64_t>(s.todo);
  out.pending = static_cast<int64_t>(s.pending);
  out.done = static_cast<int64_t>(s.done);
  out.failed = static_cast<int64_t>(s.failed);
  for (uint64_t id : s.failed_tasks)
    out.failed_tasks.push_back(static_cast<int64_t>(id));
  out.trainers = s.trainers;
  out.avg_task_ms = s.avg_task_ms;
  out.task_timeout_ms = s.task_timeout_ms;
}

}  // namespace fabps::master
