// How much of the recent past the calling thread spent waiting for a core:
// runnable, but not running, because other threads had the CPUs. Read from
// the kernel's scheduler statistics of the thread (/proc/thread-self/
// schedstat: time on the CPU, time waiting on a run queue, in ns).
//
// A polling loop uses it to decide whether its spinning is free (an idle
// core) or taken from other threads that have work (more runnable threads
// than cores): then it should sleep on an event instead.
//
// Not thread-safe: one object per thread, used only by the thread that
// created it.
#ifndef FABPS_BASE_RUN_QUEUE_DELAY_H_
#define FABPS_BASE_RUN_QUEUE_DELAY_H_

#include <chrono>
#include <cstdint>
#include <optional>

namespace fabps {

class RunQueueDelay {
 public:
  // Opens the calling thread's statistics. Without them (no /proc, an
  // older kernel) Contended() is always false.
  RunQueueDelay();
  ~RunQueueDelay();
  RunQueueDelay(const RunQueueDelay&) = delete;
  RunQueueDelay& operator=(const RunQueueDelay&) = delete;

  // True when, over the last completed interval of at least `interval`,
  // the thread spent more than `share` of the time it was runnable (on a
  // CPU or waiting for one) waiting. Time asleep does not count: a thread
  // that sleeps on an event and, woken, waits for a core is still
  // contended. An interval in which it never ran nor waited keeps the last
  // answer. Re-reads the statistics (one pread) only once `interval` has
  // passed since the last reading, so calling it on every turn of a loop
  // costs a comparison.
  bool Contended(std::chrono::steady_clock::time_point now,
                 std::chrono::microseconds interval, double share);

  // Starts a new interval at `now`: the next answer covers only what
  // follows (say, after a sleep that would dilute it).
  void Restart(std::chrono::steady_clock::time_point now);

  struct Times {
    uint64_t on_cpu_ns;
    uint64_t waiting_ns;  // runnable, on a run queue
  };
  // The thread's totals so far; nullopt without statistics.
  std::optional<Times> Read() const;

 private:
  int fd_ = -1;
  std::chrono::steady_clock::time_point last_read_{};
  Times last_{0, 0};
  bool contended_ = false;
};

}  // namespace fabps

#endif  // FABPS_BASE_RUN_QUEUE_DELAY_H_
