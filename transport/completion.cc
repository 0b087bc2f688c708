#include "transport/completion.h"

#include <sched.h>

#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace fabps::transport {
namespace {

// Checks (each a `pause`, some tens of ns) before a waiter on a kThread
// endpoint sleeps. Short: the thread that completes the operation (the
// progress thread) may need the very core the waiter spins on
// (docs/decisions/004-short-spin-before-a-waiter-sleeps.md).
constexpr int kSpinChecks = 200;

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Turns of the polling loop between two looks at the clock. A clock read
// costs about as much as an empty poll of the shm provider (perf: 42% of a 64 B
// pingpong's time went to reading the clock when every poll read it), and the
// time to notice a completion is the length of one turn of the loop.
constexpr uint64_t kTurnsPerClockRead = 64;

// The owner drives progress (kCaller): poll the endpoint, yielding the core
// once nothing happened for a while, for the lowest latency.
Status DriveUntilDone(internal::OpState& s, Deadline deadline) {
  uint64_t polls = 0;  // that found nothing
  uint64_t turns = 0;
  while (!s.done.load(std::memory_order_acquire)) {
    // Not on the first turn: most operations a caller waits on are done
    // within a few turns, and the clock read costs as much as one.
    if (++turns % kTurnsPerClockRead == 0 && deadline.Expired()) {
      return Status::TimedOut(
          "operation not complete by its deadline (peer dead or slow?)");
    }
    internal::ProgressDriver* d = s.driver.load(std::memory_order_acquire);
    if (d == nullptr) {
      // The endpoint is closing: it cancels the operation.
      sched_yield();
      continue;
    }
    auto r = d->Progress();
    if (!r.ok()) return r.status();
    if (r.value() > 0) continue;
    if (++polls >= 2000) sched_yield();
  }
  return Status::OK();
}

}  // namespace

namespace internal {

bool OpState::PartDone(const Status& s, size_t bytes) {
  if (!s.ok()) {
    // Never after done: readers read the status without mu from then on.
    std::lock_guard<std::mutex> l(mu);
    if (status.ok() && !done.load(std::memory_order_acquire)) status = s;
  }
  if (bytes > 0) this->bytes.fetch_add(bytes, std::memory_order_relaxed);
  // acq_rel: the last part sees every earlier part's status and bytes.
  if (remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
  done.store(true, std::memory_order_seq_cst);
  // A waiter registers in `sleepers` (seq_cst) before it checks `done`
  // under mu: either it sees done set, or this load sees it registered and
  // the notification, under mu, comes after it is blocked on done_cv.
  if (sleepers.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> l(mu);
    done_cv.notify_all();
  }
  return true;
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
  return s_->status;  // final once done is seen (PartDone)
}

CompletionInfo Completion::info() const {
  if (!s_ || !done()) return {};
  CompletionInfo i;
  i.bytes = s_->bytes.load(std::memory_order_relaxed);
  return i;
}

Status Completion::Wait(Deadline deadline) {
  if (!s_) return Status::OK();
  // Done: the endpoint (the driver) may be gone already.
  if (done()) return *Poll();
  internal::ProgressDriver* d = s_->driver.load(std::memory_order_acquire);
  if (d != nullptr && d->busy_poll()) {
    Status s = DriveUntilDone(*s_, deadline);
    if (!s.ok()) return s;
    return *Poll();
  }
  // A progress thread completes the operation. Spin a little (a small
  // operation often ends within microseconds), then sleep until PartDone
  // notifies or the deadline passes. A caller that only looks (a deadline
  // in the past: TransferHandle::Finished polling every transfer in flight)
  // does not spin at all.
  if (!done() && !deadline.Expired()) {
    for (int i = 0; i < kSpinChecks && !done(); i++) CpuRelax();
  }
  if (!done()) {
    std::unique_lock<std::mutex> l(s_->mu);
    s_->sleepers.fetch_add(1, std::memory_order_seq_cst);
    const bool in_time = s_->done_cv.wait_until(l, deadline.time(), [this] {
      return s_->done.load(std::memory_order_seq_cst);
    });
    s_->sleepers.fetch_sub(1, std::memory_order_relaxed);
    if (!in_time) {
      return Status::TimedOut(
          "operation not complete by its deadline (peer dead or slow?)");
    }
  }
  return *Poll();
}

}  // namespace fabps::transport
