// Internal: the shared state behind a Completion handle. Backends derive from
// OpState to attach their per-operation contexts. Not for use outside
// transport/.
#ifndef FABPS_TRANSPORT_COMPLETION_H_
#define FABPS_TRANSPORT_COMPLETION_H_

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "base/status.h"
#include "transport/fabric.h"

namespace fabps::transport::internal {

// Whoever can make progress for an operation: its endpoint.
class ProgressDriver {
 public:
  virtual ~ProgressDriver() = default;
  virtual Result<size_t> Progress() = 0;
  // True when the owner asked to drive progress itself (kCaller): waits
  // call Progress() and spin (yielding). False when a progress thread reads
  // the completion queue: waits spin briefly, then sleep on the operation's
  // condition variable until PartDone wakes them.
  virtual bool busy_poll() const = 0;
};

// One posted operation, possibly split into `parts` provider operations. It
// is done when every part has completed; its status is the first error of
// any part, else OK.
struct OpState {
  explicit OpState(int parts) : remaining(parts) {}
  virtual ~OpState() = default;

  // Records one part's end. Returns true when this was the last part; then
  // every thread blocked in Completion::Wait on it is woken. Takes `mu` only
  // for an error or when a waiter sleeps: a completion nobody sleeps on (a
  // polling waiter, kCaller) costs a few atomic operations.
  bool PartDone(const Status& s, size_t bytes);

  std::atomic<ProgressDriver*> driver{
      nullptr};  // null once the endpoint is gone
  std::atomic<int> remaining;
  // Set (seq_cst) by the last PartDone; `status` and `bytes` are final
  // once it is seen set.
  std::atomic<bool> done{false};
  // Waiters sleeping on done_cv (seq_cst, against `done`: a PartDone that
  // sees none needs no notification, one that sees some notifies under mu).
  std::atomic<int> sleepers{0};
  std::atomic<size_t> bytes{0};
  std::mutex mu;
  std::condition_variable done_cv;  // notified under mu when done is set
  Status status;                    // the first error; written under mu
};

}  // namespace fabps::transport::internal

#endif  // FABPS_TRANSPORT_COMPLETION_H_
