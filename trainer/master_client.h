// MasterClient: a trainer's reader of the job's dataset, fed by the master.
//
//   auto c = MasterClient::Create({.master_address = "127.0.0.1:7164",
//                                  .trainer_id = 7});
//   (*c)->SetDataset({"/data/fashion-mnist-train-*"});
//   for (int64_t pass = 0; pass < passes; ++pass) {
//     (*c)->StartGetRecords(pass);
//     std::string_view rec;
//     while (true) {
//       auto more = (*c)->NextRecord(&rec);   // false at the end of the pass
//       if (!more.ok()) ...;                   // error
//       if (!*more) break;
//       Train(rec);
//     }
//   }
//
// Behind NextRecord a background thread asks the master for tasks and reads
// their recordio chunks, one task ahead of the one being consumed. When the
// last record of a task is handed out the client reports TaskFinished (the
// background thread sends it, so NextRecord itself makes no RPC while a
// task is ready; destruction and the next StartGetRecords wait up to
// rpc_timeout_ms for the reports still queued); when
// a task's chunks cannot be read (missing file, corruption) it reports
// TaskFailed and moves on, so the master can hand it to someone else or
// count it as failed. While the master has no task now (others are pending)
// it polls with backoff, for at most `wait_for_task_ms`.
//
// Finding the master: `master_address` ("host:port"), or, when it is empty,
// the key master/addr in the coordination store `store_spec` for `job`,
// looked up again whenever the master cannot be reached. RPCs are retried
// with backoff for `rpc_retry_ms` while the master is unreachable, so a
// restarting master is ridden out.
//
// Thread safety (the same rule as the master client of the C API): one
// thread at a time drives a MasterClient (SetDataset, StartGetRecords,
// NextRecord, RequestSaveModel, GetStatus are not to be called
// concurrently); the prefetch thread is internal.
#ifndef FABPS_TRAINER_MASTER_CLIENT_H_
#define FABPS_TRAINER_MASTER_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "trainer/trainer_id.h"

namespace fabps::trainer {

struct MasterClientOptions {
  std::string master_address;  // "host:port"; empty: look it up in the store
  std::string store_spec;      // e.g. "local:/dir" (used when no address)
  std::string job = "default";
  // Shown in the master's status (in decimal) and the save-model owner; the
  // same id as PServerClientOptions::trainer_id. 0: a random one.
  TrainerId trainer_id = 0;
  int rpc_timeout_ms = 10'000;    // connect, send and receive
  int64_t rpc_retry_ms = 30'000;  // retrying an unreachable master
  int64_t wait_for_task_ms =
      600'000;  // NextRecord waiting while others hold tasks
  int64_t poll_initial_ms = 10;
  int64_t poll_max_ms = 500;
};

// What the master reports about the job.
struct MasterStatusSummary {
  int64_t pass = 0;
  int64_t num_tasks = 0, todo = 0, pending = 0, done = 0, failed = 0;
  std::vector<int64_t> failed_tasks;
  std::vector<std::string> trainers;
};

class MasterClient {
 public:
  // InvalidArgument for bad options; opening the store may fail. Does not
  // contact the master yet.
  static Result<std::unique_ptr<MasterClient>> Create(
      const MasterClientOptions& options);
  // Stops the prefetch thread (waiting for an RPC in flight to end).
  ~MasterClient();
  MasterClient(const MasterClient&) = delete;
  MasterClient& operator=(const MasterClient&) = delete;

  // Sets the job's dataset (the first call across trainers wins; the same
  // globs again is OK, different globs FailedPrecondition).
  Status SetDataset(const std::vector<std::string>& globs);

  // Starts reading pass `pass` (0, 1, ...), dropping what is left of the
  // previous one (its unfinished task times out on the master).
  Status StartGetRecords(int64_t pass);

  // Sets *record to the next record of the pass and returns true; returns
  // false when the pass is over. *record stays valid until the next call.
  // Errors: FailedPrecondition (no StartGetRecords, or every task failed),
  // TimedOut (no task came in wait_for_task_ms), Unavailable (master gone
  // past rpc_retry_ms). After an error call StartGetRecords again.
  Result<bool> NextRecord(std::string_view* record);

  // NextRecord that waits for a task only until `until`: kRecord (in
  // *record), kPassEnd, or kNotYet when no record came by then (the master
  // has no task now, or the next one is still being read); call it again
  // later. For sync-mode trainers, which must keep stepping with the others
  // while they wait for work (examples/ctr/README.md). Errors as NextRecord.
  enum class RecordState { kRecord, kPassEnd, kNotYet };
  Result<RecordState> TryNextRecord(std::string_view* record, Deadline until);

  // true when this trainer may save the model now (others are refused for
  // block_ms).
  Result<bool> RequestSaveModel(int64_t block_ms);

  Result<MasterStatusSummary> GetStatus();

  // This trainer's id (the random one when the options gave 0).
  TrainerId trainer_id() const;

  // Tasks this client reported failed because their chunks could not be read.
  int64_t tasks_reported_failed() const;

 private:
  class Impl;
  explicit MasterClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_MASTER_CLIENT_H_
