// TransferHandle: one asynchronous push or pull of a PServerClient, waited
// on with PServerClient::Wait (public names: PushHandle, PullHandle).
//
// A transfer is done when every one-sided operation it started has
// completed and, for a push, every block's credit came back from its
// pserver (the pserver applied it). The first error wins.
//
// Thread safety: the caller's thread adds parts and waits; the fabric's
// progress thread finishes credit parts (PartDone). Everything is guarded by
// the handle's mutex.
#ifndef FABPS_TRAINER_TRANSFER_HANDLE_H_
#define FABPS_TRAINER_TRANSFER_HANDLE_H_

#include <condition_variable>
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
  // A credit came (or will never come: `s` is the reason).
  void PartDone(const Status& s);
  // A started RMA operation to wait for.
  void AddOperation(transport::Completion c);
  // Waits for every operation, then every credit. TimedOut when `deadline`
  // passes first; otherwise the first error of any part. *from_pserver is
  // set when the error is a pserver's answer in a credit (the connection
  // itself is fine).
  Status Wait(Deadline deadline, bool* from_pserver);
  // Waits until Wait would return at once (every operation and credit is
  // in, or an operation failed) or `until` passes; returns which. Changes
  // nothing: for callers that wait in slices and check for other events
  // (signals) in between.
  bool Finished(Deadline until);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int credits_pending_ = 0;
  Status status_;
  std::vector<transport::Completion> operations_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_TRANSFER_HANDLE_H_
