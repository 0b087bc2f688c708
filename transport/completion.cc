#include "transport/completion.h"

#include <sched.h>

#include <thread>

namespace fabps::transport {
namespace internal {

bool OpState::PartDone(const Status& s, size_t bytes) {
  {
    std::lock_guard<std::mutex> l(mu);
    if (!s.ok() && status.ok()) status = s;
    info.bytes += bytes;
  }
  if (remaining.fetch_sub(1) == 1) {
    done.store(true, std::memory_order_release);
    return true;
  }
  return false;
}

}  // namespace internal

Completion::Completion(std::shared_ptr<internal::OpState> s)
    : s_(std::move(s)) {}

bool Completion::done() const {
  return !s_ || s_->done.load(std::memory_order_acquire);
}

std::optional<Status> Completion::Poll() const {
  if (!done()) return std::nullopt;
  if (!s_) return Status::OK();
  std::lock_guard<std::mutex> l(s_->mu);
  return s_->status;
}

CompletionInfo Completion::info() const {
  if (!s_) return {};
  std::lock_guard<std::mutex> l(s_->mu);
  return s_->info;
}

Status Completion::Wait(Deadline deadline) {
  // Spin while the operation is likely to end within microseconds, then
  // yield, then sleep in short steps: low latency for transfers, little CPU
  // for long waits on a dead or slow peer.
  uint64_t polls = 0;
  while (!done()) {
    if (deadline.Expired()) {
      return Status::TimedOut(
          "operation not complete by its deadline (peer dead or slow?)");
    }
    internal::ProgressDriver* d = s_->driver.load(std::memory_order_acquire);
    if (d != nullptr) {
      auto r = d->Progress();
      if (!r.ok()) return r.status();
      if (r.value() > 0) continue;
    }
    polls++;
    if (polls < 2000) continue;
    if (polls < 4000 || (d != nullptr && d->busy_poll())) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return *Poll();
}

}  // namespace fabps::transport
