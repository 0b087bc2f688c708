// StallWatch: how long a progress counter has stood still. The launcher
// feeds it the job's progress (tasks done, updates applied) and each
// pserver's answered status calls, and acts when one stands still too long
// (fails the job with a diagnosis, replaces a frozen pserver).
#ifndef FABPS_CMD_LAUNCH_STALL_WATCH_H_
#define FABPS_CMD_LAUNCH_STALL_WATCH_H_

#include <chrono>
#include <cstdint>

namespace fabps::launch {

class StallWatch {
 public:
  using Clock = std::chrono::steady_clock;
  explicit StallWatch(Clock::time_point now = Clock::now()) : since_(now) {}

  // Records the counter's value at `now`; a change restarts the clock.
  void Observe(int64_t value, Clock::time_point now = Clock::now()) {
    if (value != value_) {
      value_ = value;
      since_ = now;
    }
  }
  // Starts the clock again without a change (e.g. the process restarted).
  void Reset(Clock::time_point now = Clock::now()) { since_ = now; }
  // Seconds since the counter last changed (or since Reset/construction).
  double StillFor(Clock::time_point now = Clock::now()) const {
    return std::chrono::duration<double>(now - since_).count();
  }

 private:
  int64_t value_ = -1;
  Clock::time_point since_;
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_STALL_WATCH_H_
