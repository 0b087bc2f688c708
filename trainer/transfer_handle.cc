#include "trainer/transfer_handle.h"

#include <string>

namespace fabps::trainer {

void TransferHandle::AddCreditPart() {
  std::lock_guard<std::mutex> l(mu_);
  credits_pending_++;
}

void TransferHandle::PartDone(const Status& s) {
  std::lock_guard<std::mutex> l(mu_);
  if (!s.ok() && status_.ok()) status_ = s;
  credits_pending_--;
  cv_.notify_all();
}

void TransferHandle::AddOperation(transport::Completion c) {
  std::lock_guard<std::mutex> l(mu_);
  operations_.push_back(std::move(c));
}

Status TransferHandle::Wait(Deadline deadline, bool* from_pserver) {
  *from_pserver = false;
  std::vector<transport::Completion> operations;
  {
    std::lock_guard<std::mutex> l(mu_);
    operations = operations_;
  }
  // A failed write means no credit will come: report it now.
  for (auto& op : operations) FABPS_RETURN_IF_ERROR(op.Wait(deadline));
  std::unique_lock<std::mutex> l(mu_);
  if (!cv_.wait_until(l, deadline.time(),
                      [&] { return credits_pending_ == 0; })) {
    return Status::TimedOut(
        std::to_string(credits_pending_) +
        " gradient blocks not acknowledged by their pservers by the deadline");
  }
  *from_pserver = !status_.ok();
  return status_;
}

bool TransferHandle::Finished(Deadline until) {
  std::vector<transport::Completion> operations;
  {
    std::lock_guard<std::mutex> l(mu_);
    operations = operations_;
  }
  for (auto& op : operations) {
    if (!op.done()) (void)op.Wait(until);
    std::optional<Status> s = op.Poll();
    if (!s) return false;
    if (!s->ok()) return true;  // Wait reports it without the credits
  }
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_until(l, until.time(), [&] { return credits_pending_ == 0; });
}

}  // namespace fabps::trainer
