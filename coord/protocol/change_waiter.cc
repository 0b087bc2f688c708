#include "coord/protocol/change_waiter.h"

#include <thread>
#include <vector>

namespace fabps::coord::internal {

ChangeWaiter::ChangeWaiter(Store* store, std::string prefix)
    : store_(store), prefix_(std::move(prefix)) {}

bool ChangeWaiter::Wait(int64_t seen_revision, Deadline deadline) {
  if (deadline.Expired()) return false;
  Deadline slice = Sooner(deadline, Deadline::InMs(kMaxWaitMs));
  auto pause = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::min<int64_t>(kRetryMs, slice.RemainingMs())));
    return !deadline.Expired();
  };
  // No read succeeded: the store is unreachable, a watch would not be set
  // up either (and one from revision 1 would replay the whole history).
  if (seen_revision <= 0) return pause();
  if (watch_ == nullptr) {
    // Events queued in an older watch are only ever extra wake-ups, so one
    // watch from the first seen revision serves the whole wait.
    auto w = store_->WatchKeys(prefix_, /*prefix=*/true, seen_revision + 1,
                               Sooner(slice, store_->DefaultDeadline()));
    if (!w.ok()) return pause();
    watch_ = std::move(*w);
  }
  std::vector<WatchEvent> events;
  Status s = watch_->Next(&events, slice);
  if (s.ok()) return true;
  if (s.code() != Status::Code::kTimedOut) {
    watch_.reset();  // ended (compacted, cancelled): set up anew next time
    return pause();
  }
  return !deadline.Expired();
}

}  // namespace fabps::coord::internal
