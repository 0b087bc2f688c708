// PserverAnswers: per pserver index, how long it has answered no status
// call. The progress poll records each answer; supervision replaces a
// pserver silent for --unresponsive-timeout (frozen) and the status page
// shows one silent for a few seconds.
#ifndef FABPS_CMD_LAUNCH_PSERVER_ANSWERS_H_
#define FABPS_CMD_LAUNCH_PSERVER_ANSWERS_H_

#include <cstdint>
#include <vector>

#include "cmd/launch/stall_watch.h"

namespace fabps::launch {

class PserverAnswers {
 public:
  using Clock = StallWatch::Clock;

  // `count` pservers, each silent since now.
  void Assign(int count) {
    watches_.assign(count, StallWatch());
    answered_.assign(count, 0);
  }
  void ResetAll() {
    for (auto& w : watches_) w.Reset();
  }
  bool Has(int i) const {
    return i >= 0 && i < static_cast<int>(watches_.size());
  }
  void Answered(int i, Clock::time_point now) {
    watches_[i].Observe(++answered_[i], now);
  }
  void Reset(int i) { watches_[i].Reset(); }
  // Seconds since pserver i last answered (or was reset).
  double SilentFor(int i, Clock::time_point now = Clock::now()) const {
    return watches_[i].StillFor(now);
  }

 private:
  std::vector<StallWatch> watches_;
  std::vector<int64_t> answered_;
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_PSERVER_ANSWERS_H_
