#include "trainer/master_client.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "base/log.h"
#include "base/thread_name.h"
#include "coord/store.h"
#include "recordio/reader.h"
#include "trainer/master_rpc.h"

namespace fabps::trainer {
namespace {

namespace gen = ::fabps::rpc::master;

// A task whose chunks have been read and checked.
struct LoadedTask {
  int64_t id = 0;
  int64_t epoch = 0;
  std::vector<recordio::Chunk> chunks;
};

// What the prefetch thread hands to NextRecord.
struct Item {
  enum class Kind { kTask, kPassEnd, kError } kind = Kind::kTask;
  LoadedTask task;
  Status error;
};

}  // namespace

class MasterClient::Impl {
 public:
  Impl(const MasterClientOptions& o, std::unique_ptr<coord::Store> store)
      : options_(o),
        rpc_(o.master_address, std::move(store), o.rpc_timeout_ms,
             o.rpc_retry_ms, &stop_) {}
  ~Impl() { StopProducer(); }

  Status SetDataset(const std::vector<std::string>& globs) {
    return rpc_.SetDataset(globs);
  }

  Status Start(int64_t pass) {
    if (pass < 0) return Status::InvalidArgument("pass must be >= 0");
    StopProducer();
    cur_.reset();
    queue_.clear();
    terminal_.reset();
    started_ = true;
    stop_ = false;
    producing_ = true;
    producer_ = std::thread([this, pass] {
      SetThreadName("fabps-tasks");
      RunProducer(pass);
    });
    return Status::OK();
  }

  // With `until`, waits for the next task at most until then (kNotYet).
  Result<RecordState> Next(std::string_view* record, const Deadline* until) {
    if (!started_)
      return Status::FailedPrecondition("NextRecord before StartGetRecords");
    while (true) {
      if (cur_ != nullptr && SeekRecord()) {
        *record = cur_->chunks[chunk_idx_].record(rec_idx_++);
        if (!SeekRecord()) ReportFinished();  // that was the task's last record
        return RecordState::kRecord;
      }
      cur_.reset();
      if (terminal_ != nullptr) {
        if (terminal_->kind == Item::Kind::kPassEnd)
          return RecordState::kPassEnd;
        return terminal_->error;
      }
      Item item;
      {
        std::unique_lock<std::mutex> l(mu_);
        // The producer bounds its own waits; this is a backstop.
        auto limit = std::chrono::milliseconds(
            options_.wait_for_task_ms + 4 * options_.rpc_retry_ms + 60'000);
        auto ready = [&] { return !queue_.empty(); };
        if (until != nullptr && until->time() < SteadyClock::now() + limit) {
          if (!cv_.wait_until(l, until->time(), ready))
            return RecordState::kNotYet;
        } else if (!cv_.wait_for(l, limit, ready)) {
          return Status::TimedOut("no task from the master in time");
        }
        item = std::move(queue_.front());
        queue_.pop_front();
        cv_.notify_all();
      }
      if (item.kind != Item::Kind::kTask) {
        terminal_ = std::make_unique<Item>(std::move(item));
        continue;
      }
      cur_ = std::make_unique<LoadedTask>(std::move(item.task));
      chunk_idx_ = rec_idx_ = 0;
      if (!SeekRecord()) ReportFinished();  // a task without records
    }
  }

  Result<bool> RequestSaveModel(int64_t block_ms) {
    return rpc_.RequestSaveModel(trainer_name_, block_ms);
  }

  Result<MasterStatusSummary> GetStatus() {
    FABPS_ASSIGN_OR_RETURN(gen::MasterStatus st, rpc_.GetStatus());
    MasterStatusSummary s;
    s.pass = st.pass_id;
    s.num_tasks = st.num_tasks;
    s.todo = st.todo;
    s.pending = st.pending;
    s.done = st.done;
    s.failed = st.failed;
    s.failed_tasks = st.failed_tasks;
    s.trainers = st.trainers;
    return s;
  }

  int64_t tasks_reported_failed() const { return reported_failed_.load(); }
  TrainerId trainer_id() const { return options_.trainer_id; }

 private:
  // Moves (chunk_idx_, rec_idx_) to the next record; false when none is left.
  bool SeekRecord() {
    while (chunk_idx_ < cur_->chunks.size() &&
           rec_idx_ >= cur_->chunks[chunk_idx_].size()) {
      ++chunk_idx_;
      rec_idx_ = 0;
    }
    return chunk_idx_ < cur_->chunks.size();
  }

  // The current task's last record was handed out: the producer reports it
  // finished (an RPC, off the caller's thread); once the producer has
  // ended (pass end, an error) the caller reports it itself.
  void ReportFinished() {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (producing_) {
        finished_.push_back({cur_->id, cur_->epoch});
        cv_.notify_all();
        return;
      }
    }
    SendFinished({cur_->id, cur_->epoch});
  }

  struct TaskRef {
    int64_t id = 0;
    int64_t epoch = 0;
  };
  void SendFinished(TaskRef t) {
    auto r = rpc_.TaskFinished(t.id, t.epoch);
    if (!r.ok()) {
      FABPS_LOG(WARNING) << "reporting task " << t.id
                         << " finished: " << r.status().ToString()
                         << " (it will time out and be handed out again)";
    } else if (!r.value()) {
      FABPS_LOG(INFO)
          << "task " << t.id << " epoch " << t.epoch
          << " was already timed out on the master; its finish was ignored";
    }
  }
  // The producer's side: sends the finishes queued so far. Returns false
  // when stopped.
  bool SendQueuedFinishes() {
    while (true) {
      TaskRef t;
      {
        std::lock_guard<std::mutex> l(mu_);
        if (finished_.empty()) {
          cv_.notify_all();  // StopProducer may wait for the queue to drain
          return !stop_;
        }
        t = finished_.front();
        finished_.pop_front();
      }
      SendFinished(t);
    }
  }

  void Push(Item item) {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(item));
    cv_.notify_all();
  }
  void PushError(Status s) {
    Item it;
    it.kind = Item::Kind::kError;
    it.error = std::move(s);
    Push(std::move(it));
  }
  // Sleeps up to ms unless stopped; returns false when stopped.
  // (or until a finish is queued: it goes out during the pause).
  bool SleepUnlessStopped(int64_t ms) {
    auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (true) {
      {
        std::unique_lock<std::mutex> l(mu_);
        if (!cv_.wait_until(l, until,
                            [&] { return stop_ || !finished_.empty(); }))
          return true;
        if (stop_) return false;
      }
      if (!SendQueuedFinishes()) return false;
    }
  }

  Status LoadTask(const gen::Task& t, LoadedTask* out) {
    out->id = t.id;
    out->epoch = t.epoch;
    std::unique_ptr<recordio::ChunkFile> file;
    for (const gen::Chunk& c : t.chunks) {
      if (c.offset < 0 || c.records < 0)
        return Status::Corruption("master sent a bad chunk");
      if (file == nullptr || file->path() != c.path) {
        file.reset();
        FABPS_ASSIGN_OR_RETURN(file, recordio::ChunkFile::Open(c.path));
      }
      FABPS_ASSIGN_OR_RETURN(recordio::Chunk chunk,
                             file->ReadChunk(static_cast<uint64_t>(c.offset)));
      if (chunk.size() != static_cast<size_t>(c.records)) {
        return Status::Corruption(
            c.path + " offset " + std::to_string(c.offset) +
            ": record count differs from the master's index");
      }
      out->chunks.push_back(std::move(chunk));
    }
    return Status::OK();
  }

  // The producer thread: Produce, then marks that it has ended (finishes
  // queued after that are the caller's to send).
  void RunProducer(int64_t pass) {
    Produce(pass);
    while (true) {
      SendQueuedFinishes();
      std::lock_guard<std::mutex> l(mu_);
      if (finished_.empty()) {
        producing_ = false;
        cv_.notify_all();
        return;
      }
    }
  }

  void Produce(int64_t pass) {
    int64_t poll = options_.poll_initial_ms;
    auto no_task_since = std::chrono::steady_clock::time_point::min();
    while (true) {
      {
        // One task ahead: fetch the next only when the last one was taken.
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l,
                 [&] { return stop_ || queue_.empty() || !finished_.empty(); });
        if (stop_) return;
      }
      // Finishes first: a master with no task now may be waiting for them.
      if (!SendQueuedFinishes()) return;
      {
        std::lock_guard<std::mutex> l(mu_);
        if (!queue_.empty()) continue;  // woken for finishes only
      }
      auto r = rpc_.GetTask(pass, trainer_name_);
      if (stop_) return;
      if (!r.ok()) return PushError(r.status());
      switch (r->result) {
        case gen::GetTaskResult::TASK: {
          poll = options_.poll_initial_ms;
          no_task_since = std::chrono::steady_clock::time_point::min();
          Item item;
          Status s = LoadTask(r->task, &item.task);
          if (!s.ok()) {
            FABPS_LOG(WARNING) << "task " << r->task.id << ": " << s.ToString()
                               << "; reporting it failed";
            auto f = rpc_.TaskFailed(r->task.id, r->task.epoch);
            if (!f.ok()) return PushError(f.status());
            ++reported_failed_;
            continue;
          }
          Push(std::move(item));
          break;
        }
        case gen::GetTaskResult::PASS_FINISHED: {
          Item end;
          end.kind = Item::Kind::kPassEnd;
          return Push(std::move(end));
        }
        case gen::GetTaskResult::ALL_FAILED:
          return PushError(Status::FailedPrecondition(
              "every task of the dataset has failed"));
        case gen::GetTaskResult::NO_TASK_NOW:
        default: {
          auto now = std::chrono::steady_clock::now();
          if (no_task_since == std::chrono::steady_clock::time_point::min())
            no_task_since = now;
          if (now - no_task_since >
              std::chrono::milliseconds(options_.wait_for_task_ms)) {
            return PushError(Status::TimedOut(
                "no task available from the master for " +
                std::to_string(options_.wait_for_task_ms) + " ms"));
          }
          if (!SleepUnlessStopped(poll)) return;
          poll = std::min(poll * 2, options_.poll_max_ms);
          break;
        }
      }
    }
  }

  // Lets the producer send the finishes queued so far (waiting at most one
  // RPC timeout), then stops it.
  void StopProducer() {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_for(l, std::chrono::milliseconds(options_.rpc_timeout_ms),
                   [&] { return !producing_ || finished_.empty(); });
      stop_ = true;
      cv_.notify_all();
    }
    if (producer_.joinable()) producer_.join();
  }

  const MasterClientOptions options_;
  // The id as the master's RPCs carry it.
  const std::string trainer_name_ = std::to_string(options_.trainer_id);
  std::atomic<bool> stop_{false};
  MasterRpc rpc_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;  // guarded by mu_
  // Tasks whose last record was handed out, for the producer to report
  // (guarded by mu_).
  std::deque<TaskRef> finished_;
  bool producing_ = false;  // guarded by mu_: the producer thread runs
  std::thread producer_;
  std::atomic<int64_t> reported_failed_{0};
  // Consumer state (the caller's thread only).
  bool started_ = false;
  std::unique_ptr<LoadedTask> cur_;
  size_t chunk_idx_ = 0, rec_idx_ = 0;
  std::unique_ptr<Item> terminal_;  // pass end or error, once reached
};

Result<std::unique_ptr<MasterClient>> MasterClient::Create(
    const MasterClientOptions& options) {
  if (options.rpc_timeout_ms < 1 || options.rpc_retry_ms < 0 ||
      options.wait_for_task_ms < 0 || options.poll_initial_ms < 1 ||
      options.poll_max_ms < options.poll_initial_ms) {
    return Status::InvalidArgument("master client options out of range");
  }
  if (options.trainer_id < 0)
    return Status::InvalidArgument("trainer_id must be >= 0 (0: random)");
  MasterClientOptions resolved = options;
  if (resolved.trainer_id == 0) resolved.trainer_id = RandomTrainerId();
  std::unique_ptr<coord::Store> store;
  if (options.master_address.empty()) {
    if (options.store_spec.empty()) {
      return Status::InvalidArgument("give a master address or a store spec");
    }
    coord::StoreOptions so;
    so.spec = options.store_spec;
    so.job = options.job;
    so.timeout_ms = options.rpc_timeout_ms;
    FABPS_ASSIGN_OR_RETURN(store, coord::OpenStore(so));
  } else {
    rpc::RpcClientOptions check;
    FABPS_RETURN_IF_ERROR(rpc::ParseHostPort(options.master_address, &check));
  }
  return std::unique_ptr<MasterClient>(
      new MasterClient(std::make_unique<Impl>(resolved, std::move(store))));
}

MasterClient::MasterClient(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
MasterClient::~MasterClient() = default;

Status MasterClient::SetDataset(const std::vector<std::string>& globs) {
  return impl_->SetDataset(globs);
}
Status MasterClient::StartGetRecords(int64_t pass) {
  return impl_->Start(pass);
}
Result<bool> MasterClient::NextRecord(std::string_view* record) {
  FABPS_ASSIGN_OR_RETURN(RecordState r, impl_->Next(record, nullptr));
  return r == RecordState::kRecord;
}
Result<MasterClient::RecordState> MasterClient::TryNextRecord(
    std::string_view* record, Deadline until) {
  return impl_->Next(record, &until);
}
Result<bool> MasterClient::RequestSaveModel(int64_t block_ms) {
  return impl_->RequestSaveModel(block_ms);
}
Result<MasterStatusSummary> MasterClient::GetStatus() {
  return impl_->GetStatus();
}
TrainerId MasterClient::trainer_id() const { return impl_->trainer_id(); }
int64_t MasterClient::tasks_reported_failed() const {
  return impl_->tasks_reported_failed();
}

}  // namespace fabps::trainer
