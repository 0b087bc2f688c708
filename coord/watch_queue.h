// WatchQueue: the queue between a backend's thread that produces watch events
// and the caller that drains them with Watch::Next (internal to coord/).
//
// Thread safety: all methods may be called concurrently.
#ifndef FABPS_COORD_WATCH_QUEUE_H_
#define FABPS_COORD_WATCH_QUEUE_H_

#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/store.h"

namespace fabps::coord::internal {

class WatchQueue {
 public:
  // Appends events in order. Past Watch::kMaxQueuedEvents the queue fails
  // with kResourceExhausted. Ignored once the queue has failed.
  void Push(std::vector<WatchEvent> events);
  // Ends the queue with `why` (not OK): Next returns it once the events
  // queued before are drained. Only the first call counts.
  void Fail(const Status& why);
  // As Watch::Next.
  Status Next(std::vector<WatchEvent>* events, Deadline deadline);
  // True once Fail or Cancel was called.
  bool done() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<WatchEvent> events_;
  Status end_;  // not OK once failed
};

}  // namespace fabps::coord::internal

#endif  // FABPS_COORD_WATCH_QUEUE_H_
