#include "trainer/transfer_handle.h"

#include <string>

namespace fabps::trainer {

void TransferHandle::AddCreditPart() {
  std::lock_guard<std::mutex> l(mu_);
  credits_pending_++;
}

void TransferHandle::PartDone(const Status& s, bool from_pserver) {
  std::lock_guard<std::mutex> l(mu_);
  Status& first = from_pserver ? status_ : local_status_;
  if (!s.ok() && first.ok()) first = s;
  credits_pending_--;
  cv_.notify_all();
}

void TransferHandle::AddOperation(transport::Completion c) {
  std::lock_guard<std::mutex> l(mu_);
  operations_.push_back(std::move(c));
}

void TransferHandle::SetFinish(Finish f) {
  std::lock_guard<std::mutex> l(mu_);
  finish_ = std::move(f);
}

std::vector<transport::Completion> TransferHandle::OperationsFrom(size_t from) {
  std::lock_guard<std::mutex> l(mu_);
  if (from >= operations_.size()) return {};
  return {operations_.begin() + static_cast<std::ptrdiff_t>(from),
          operations_.end()};
}

Status TransferHandle::Wait(Deadline deadline, bool* from_pserver) {
  *from_pserver = false;
  // A failed write means no credit will come: report it now (once the
  // credits that will come are in, the finish still runs). Operations that
  // credits start are added before their credit part is done: once every
  // credit is in, one more look finds them all.
  Status op_status;
  size_t waited = 0;
  for (int round = 0; round < 2 && op_status.ok(); round++) {
    std::vector<transport::Completion> operations = OperationsFrom(waited);
    waited += operations.size();
    for (auto& op : operations) {
      op_status = op.Wait(deadline);
      if (!op_status.ok()) break;
    }
    if (round == 1 || !op_status.ok()) break;
    std::unique_lock<std::mutex> l(mu_);
    if (!cv_.wait_until(l, deadline.time(),
                        [&] { return credits_pending_ == 0; })) {
      const int pending = credits_pending_;
      l.unlock();
      Abandon();
      return Status::TimedOut(std::to_string(pending) +
                              " gradient blocks not acknowledged by their "
                              "pservers by the deadline");
    }
  }
  std::unique_lock<std::mutex> l(mu_);
  if (op_status.ok()) op_status = local_status_;
  if (!op_status.ok()) abandoned_.store(true, std::memory_order_release);
  *from_pserver = op_status.ok() && !status_.ok();
  Status s = op_status.ok() ? status_ : op_status;
  Finish finish = std::move(finish_);
  finish_ = nullptr;
  l.unlock();
  if (!finish) return s;
  Status f = finish(s, deadline);
  if (s.ok() && !f.ok()) *from_pserver = false;
  return f;
}

bool TransferHandle::Finished(Deadline until) {
  size_t looked = 0;
  for (int round = 0; round < 2; round++) {
    std::vector<transport::Completion> operations = OperationsFrom(looked);
    looked += operations.size();
    for (auto& op : operations) {
      if (!op.done()) (void)op.Wait(until);
      std::optional<Status> s = op.Poll();
      if (!s) return false;
      if (!s->ok()) return true;  // Wait reports it without the credits
    }
    if (round == 1) break;
    std::unique_lock<std::mutex> l(mu_);
    if (!cv_.wait_until(l, until.time(),
                        [&] { return credits_pending_ == 0; })) {
      return false;
    }
  }
  return true;
}

}  // namespace fabps::trainer
