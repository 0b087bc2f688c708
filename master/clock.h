// The master's clock: wall-clock milliseconds since the Unix epoch, because
// task deadlines are persisted and must mean the same thing to the next
// master process. Injectable so tests can move time by hand.
//
// Thread safety: NowMs may be called from any thread.
#ifndef FABPS_MASTER_CLOCK_H_
#define FABPS_MASTER_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>

namespace fabps::master {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowMs() = 0;
};

class SystemClock : public Clock {
 public:
  int64_t NowMs() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that moves only when told to.
class FakeClock : public Clock {
 public:
  explicit FakeClock(int64_t start_ms = 1'000'000) : now_(start_ms) {}
  int64_t NowMs() override { return now_.load(); }
  void AdvanceMs(int64_t ms) { now_ += ms; }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace fabps::master

#endif  // FABPS_MASTER_CLOCK_H_
