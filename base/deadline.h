// Deadlines: every wait in fabps has one. A Deadline is a point on the
// steady clock; Deadline::Infinite() exists for tests and tools only.
#ifndef FABPS_BASE_DEADLINE_H_
#define FABPS_BASE_DEADLINE_H_

#include <chrono>
#include <cstdint>

namespace fabps {

using SteadyClock = std::chrono::steady_clock;

class Deadline {
 public:
  static Deadline In(std::chrono::nanoseconds d) {
    return Deadline(SteadyClock::now() + d);
  }
  static Deadline InMs(int64_t ms) { return In(std::chrono::milliseconds(ms)); }
  static Deadline Infinite() {
    return Deadline(SteadyClock::time_point::max());
  }
  explicit Deadline(SteadyClock::time_point t) : t_(t) {}

  bool Expired() const { return SteadyClock::now() >= t_; }
  SteadyClock::time_point time() const { return t_; }
  // Milliseconds left, clamped at 0; a large number for Infinite().
  int64_t RemainingMs() const {
    if (t_ == SteadyClock::time_point::max()) return INT64_MAX / 2;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    t_ - SteadyClock::now())
                    .count();
    return left < 0 ? 0 : left;
  }

 private:
  SteadyClock::time_point t_;
};

inline double NowSeconds() {
  return std::chrono::duration<double>(SteadyClock::now().time_since_epoch())
      .count();
}

}  // namespace fabps

#endif  // FABPS_BASE_DEADLINE_H_
