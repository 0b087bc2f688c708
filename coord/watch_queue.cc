#include "coord/watch_queue.h"

namespace fabps::coord::internal {

void WatchQueue::Push(std::vector<WatchEvent> events) {
  if (events.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!end_.ok()) return;
  if (events_.size() + events.size() > Watch::kMaxQueuedEvents) {
    end_ = Status::ResourceExhausted("watch queue over " +
                                     std::to_string(Watch::kMaxQueuedEvents) +
                                     " events: the consumer is too slow");
    events_.clear();
  } else {
    for (auto& e : events) events_.push_back(std::move(e));
  }
  cv_.notify_all();
}

void WatchQueue::Fail(const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (end_.ok()) end_ = why.ok() ? Status::Cancelled("watch ended") : why;
  cv_.notify_all();
}

Status WatchQueue::Next(std::vector<WatchEvent>* events, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  while (events_.empty() && end_.ok()) {
    // Deadline::Infinite() is time_point::max(), which wait_until cannot add
    // to.
    if (deadline.RemainingMs() > (int64_t{1} << 40)) {
      cv_.wait(lock);
    } else if (cv_.wait_until(lock, deadline.time()) ==
                   std::cv_status::timeout &&
               events_.empty() && end_.ok()) {
      return Status::TimedOut("no watch event before the deadline");
    }
  }
  if (events_.empty()) return end_;
  for (auto& e : events_) events->push_back(std::move(e));
  events_.clear();
  return Status::OK();
}

bool WatchQueue::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !end_.ok();
}

}  // namespace fabps::coord::internal
