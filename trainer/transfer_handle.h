// TransferHandle: one asynchronous push or pull of a PServerClient, waited
// on with PServerClient::Wait (public names: PushHandle, PullHandle).
//
// A transfer is done when every one-sided operation it started has
// completed and, for a push, every block's credit came back from its
// pserver (the pserver applied it), and, for a rows read, its finishing
// step (reading the rows out of the landing slots) has run. The first error
// wins. An operation may join while the transfer runs (a push's credit
// starts the read of its block, PServerClient::PushPull): it is added before
// the credit part it follows is done, so Wait sees it.
//
// Thread safety: the caller's thread adds parts and waits; the fabric's
// progress thread finishes credit parts (PartDone). Everything is guarded by
// the handle's mutex.
#ifndef FABPS_TRAINER_TRANSFER_HANDLE_H_
#define FABPS_TRAINER_TRANSFER_HANDLE_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "transport/fabric.h"

namespace fabps::trainer {

class TransferHandle {
 public:
  // One more credit to wait for (a block written into a landing slot).
  void AddCreditPart();
  // A credit came (or will never come: `s` is the reason). `from_pserver`:
  // `s` is the pserver's answer; false when this side failed (an operation
  // the credit was to start could not be posted), which Wait reports as
  // it reports a failed operation.
  void PartDone(const Status& s, bool from_pserver = true);
  // A started RMA operation to wait for.
  void AddOperation(transport::Completion c);
  // What Wait runs once the operations and credits are done (with their
  // status; it returns the transfer's), then forgets. Replaces an earlier
  // one that has not run.
  using Finish = std::function<Status(const Status&, Deadline)>;
  void SetFinish(Finish f);
  // Waits for every operation, then every credit, then runs the finish.
  // TimedOut when `deadline` passes first; otherwise the first error of any
  // part. *from_pserver is set when the error is a pserver's answer in a credit
  // (the connection itself is fine).
  Status Wait(Deadline deadline, bool* from_pserver);
  // Waits until Wait would return at once (every operation and credit is
  // in, or an operation failed) or `until` passes; returns which. Changes
  // nothing: for callers that wait in slices and check for other events
  // (signals) in between.
  bool Finished(Deadline until);
  // The caller no longer waits for this transfer (its start failed partway,
  // or its Wait gave up): what a credit would start next is not started.
  void Abandon() { abandoned_.store(true, std::memory_order_release); }
  bool abandoned() const { return abandoned_.load(std::memory_order_acquire); }

 private:
  // The operations from index `from` on (a copy, taken under mu_).
  std::vector<transport::Completion> OperationsFrom(size_t from);

  std::atomic<bool> abandoned_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int credits_pending_ = 0;
  Status status_;        // the first error a pserver answered
  Status local_status_;  // the first error of a part that failed here
  std::vector<transport::Completion> operations_;
  Finish finish_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_TRANSFER_HANDLE_H_
