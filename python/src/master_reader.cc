#include "python/src/master_reader.h"

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "python/src/call_thread.h"
#include "python/src/status_error.h"
#include "trainer/master_client.h"

namespace py = pybind11;

namespace fabps::python {

namespace {

using trainer::MasterClient;

class Reader {
 public:
  explicit Reader(const trainer::MasterClientOptions& o) {
    client_ = ValueOrThrow(MasterClient::Create(o));
    thread_ = std::make_unique<CallThread>();
  }
  ~Reader() {
    py::gil_scoped_release release;
    thread_.reset();  // runs what is queued, then the client may go
    client_.reset();
  }

  void SetDataset(std::vector<std::string> globs) {
    MasterClient* c = client_.get();
    ThrowIfError(RunInterruptibly<Status>(
        *thread_, [c, globs] { return c->SetDataset(globs); }));
  }

  void StartPass(int64_t pass) {
    MasterClient* c = client_.get();
    ThrowIfError(RunInterruptibly<Status>(
        *thread_, [c, pass] { return c->StartGetRecords(pass); }));
  }

  struct Batch {
    std::vector<std::string> records;
    Status error;
    bool ended = false;  // the pass ended
  };
  // Up to `max` records, each waited for until `until` (Infinite: as
  // NextRecord, which waits for the master's next task); stops early at the
  // pass's end, an error, or a record not there by `until`.
  static Batch ReadBatch(MasterClient* c, int max, Deadline until) {
    Batch b;
    std::string_view rec;
    while (static_cast<int>(b.records.size()) < max) {
      auto r = c->TryNextRecord(&rec, until);
      if (!r.ok()) {
        b.error = r.status();
        break;
      }
      if (*r == MasterClient::RecordState::kNotYet) break;
      if (*r == MasterClient::RecordState::kPassEnd) {
        b.ended = true;
        break;
      }
      b.records.emplace_back(rec);
    }
    return b;
  }

  // Up to `max_records` records of the pass; fewer when the pass ends or
  // the next task is not read yet, none only at the end of the pass. An error
  // after some records returns those first and raises at the next call.
  std::vector<py::bytes> NextBatch(int max_records) {
    if (!pending_error_.ok()) {
      Status s = std::move(pending_error_);
      pending_error_ = Status::OK();
      ThrowStatus(s);
    }
    if (max_records < 1)
      ThrowStatus(Status::InvalidArgument("max_records must be >= 1"));
    MasterClient* c = client_.get();
    // First what is ready, on this thread (no hand-off to the CallThread
    // and back, which on a busy machine costs a scheduling delay each way):
    // records of tasks already read need no RPC and never wait. Only when
    // none is ready does the blocking read go to the CallThread (Ctrl-C
    // aware). The CallThread being idle means the client is free (calls are
    // submitted with the GIL held only).
    Batch b;
    if (thread_->idle()) {
      py::gil_scoped_release release;
      b = ReadBatch(c, max_records, Deadline::InMs(0));
    }
    if (b.records.empty() && b.error.ok() && !b.ended) {
      b = RunInterruptibly<Batch>(*thread_, [c, max_records] {
        return ReadBatch(c, max_records, Deadline::Infinite());
      });
    }
    if (!b.error.ok()) {
      if (b.records.empty()) ThrowStatus(b.error);
      pending_error_ = b.error;
    }
    std::vector<py::bytes> out;
    out.reserve(b.records.size());
    for (const auto& r : b.records) out.emplace_back(r);
    return out;
  }

  bool RequestSaveModel(int64_t block_ms) {
    MasterClient* c = client_.get();
    return ValueOrThrow(RunInterruptibly<Result<bool>>(
        *thread_, [c, block_ms] { return c->RequestSaveModel(block_ms); }));
  }

  py::dict GetStatus() {
    MasterClient* c = client_.get();
    auto s =
        ValueOrThrow(RunInterruptibly<Result<trainer::MasterStatusSummary>>(
            *thread_, [c] { return c->GetStatus(); }));
    py::dict d;
    d["pass"] = s.pass;
    d["num_tasks"] = s.num_tasks;
    d["todo"] = s.todo;
    d["pending"] = s.pending;
    d["done"] = s.done;
    d["failed"] = s.failed;
    d["failed_tasks"] = s.failed_tasks;
    d["trainers"] = s.trainers;
    return d;
  }

  int64_t trainer_id() const { return client_->trainer_id(); }
  int64_t tasks_reported_failed() const {
    return client_->tasks_reported_failed();
  }

 private:
  std::unique_ptr<MasterClient> client_;
  std::unique_ptr<CallThread> thread_;
  Status pending_error_;
};

}  // namespace

void DefineMasterReader(py::module_& m) {
  py::class_<Reader>(m, "MasterReader")
      .def(py::init([](const std::string& address, const std::string& store,
                       const std::string& job, int64_t trainer_id,
                       int rpc_timeout_ms, int64_t rpc_retry_ms,
                       int64_t wait_for_task_ms) {
             trainer::MasterClientOptions o;
             o.master_address = address;
             o.store_spec = store;
             o.job = job;
             o.trainer_id = trainer_id;
             o.rpc_timeout_ms = rpc_timeout_ms;
             o.rpc_retry_ms = rpc_retry_ms;
             o.wait_for_task_ms = wait_for_task_ms;
             return std::make_unique<Reader>(o);
           }),
           py::arg("address"), py::arg("store"), py::arg("job"),
           py::arg("trainer_id"), py::arg("rpc_timeout_ms"),
           py::arg("rpc_retry_ms"), py::arg("wait_for_task_ms"))
      .def("set_dataset", &Reader::SetDataset, py::arg("globs"))
      .def("start_pass", &Reader::StartPass, py::arg("pass_"))
      .def("next_batch", &Reader::NextBatch, py::arg("max_records"))
      .def("request_save_model", &Reader::RequestSaveModel, py::arg("block_ms"))
      .def("status", &Reader::GetStatus)
      .def_property_readonly("trainer_id", &Reader::trainer_id)
      .def_property_readonly("tasks_reported_failed",
                             &Reader::tasks_reported_failed);
}

}  // namespace fabps::python
