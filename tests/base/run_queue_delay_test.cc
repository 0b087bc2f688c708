#include "base/run_queue_delay.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace fabps {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;

// One CPU this process may run on.
int SomeAllowedCpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (CPU_ISSET(c, &set)) return c;
  }
  return -1;
}

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

TEST(RunQueueDelay, ReadsTheThreadsTimesAndTheyNeverGoBack) {
  RunQueueDelay d;
  auto first = d.Read();
  if (!first) GTEST_SKIP() << "no /proc/thread-self/schedstat here";
  for (int i = 0; i < 100; i++) {
    // A sleep ends a stint on the CPU: the kernel adds it to the total.
    std::this_thread::sleep_for(microseconds(100));
    auto t = d.Read();
    ASSERT_TRUE(t.has_value());
    ASSERT_GE(t->on_cpu_ns, first->on_cpu_ns);
    ASSERT_GE(t->waiting_ns, first->waiting_ns);
    first = t;
  }
  EXPECT_GT(first->on_cpu_ns, 0u);
}

// A thread that shares its only CPU with a spinning thread must wait for
// it, and sees that within a few intervals (it waits for the event,
// Contended turning true, with a deadline).
TEST(RunQueueDelay, SeesACoreSharedWithASpinningThread) {
  const int cpu = SomeAllowedCpu();
  ASSERT_GE(cpu, 0);
  std::atomic<bool> stop{false};
  std::atomic<bool> pinned{false};
  std::thread spinner([&] {
    pinned = PinTo(cpu);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  bool seen = false;
  bool skipped = false;
  std::thread watcher([&] {
    if (!PinTo(cpu)) return;
    RunQueueDelay d;
    if (!d.Read()) {
      skipped = true;
      return;
    }
    const auto end = Clock::now() + std::chrono::seconds(20);
    while (!seen && Clock::now() < end) {
      // Spins too: a runnable thread, never sleeping.
      seen = d.Contended(Clock::now(), microseconds(2000), 0.2);
    }
  });
  watcher.join();
  stop = true;
  spinner.join();
  if (skipped) GTEST_SKIP() << "no /proc/thread-self/schedstat here";
  ASSERT_TRUE(pinned.load());
  EXPECT_TRUE(seen) << "20 s on one CPU beside a spinning thread, and no "
                       "interval of 2 ms with 20 % of it spent waiting";
}

// Between readings the last answer stands: a call within the interval does
// not read again.
TEST(RunQueueDelay, AnswersFromTheLastReadingWithinTheInterval) {
  RunQueueDelay d;
  if (!d.Read()) GTEST_SKIP() << "no /proc/thread-self/schedstat here";
  // Some time on the CPU, ended by a sleep, for the first reading to see.
  std::this_thread::sleep_for(microseconds(100));
  // A reading with a share below zero: any wait, even none, is more.
  ASSERT_TRUE(
      d.Contended(Clock::now() + microseconds(1), microseconds(0), -1.0));
  // Within an hour of it, no new reading: the same answer, although no wait
  // could exceed twice the interval.
  EXPECT_TRUE(
      d.Contended(Clock::now() + microseconds(2), std::chrono::hours(1), 2.0));
  // Once the interval has passed, a new reading.
  std::this_thread::sleep_for(microseconds(100));
  EXPECT_FALSE(d.Contended(Clock::now() + std::chrono::hours(2),
                           std::chrono::hours(1), 2.0));
}

}  // namespace
}  // namespace fabps
