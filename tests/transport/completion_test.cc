// Completion and its OpState without a fabric: the wake-up protocol between
// PartDone (a progress thread) and waiters that sleep (kThread), which takes
// no lock unless a waiter sleeps. A lost wake-up shows as a TimedOut; a torn
// status or byte count as a wrong value. Also run under ThreadSanitizer.
#include "transport/completion.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "transport/fabric.h"

namespace fabps::transport {
namespace {

std::shared_ptr<internal::OpState> NewState(int parts) {
  return std::make_shared<internal::OpState>(parts);
}

TEST(CompletionTest, EverySleeperWakesAndSeesTheFinalState) {
  constexpr int kRounds = 2000;
  for (int round = 0; round < kRounds; round++) {
    auto state = NewState(3);
    const bool fail = round % 3 == 0;
    std::vector<std::thread> waiters;
    std::atomic<int> ok{0}, failed{0};
    for (int w = 0; w < 2; w++) {
      waiters.emplace_back([&] {
        Completion c(state);
        Status s = c.Wait(Deadline::InMs(20000));
        if (s.ok()) {
          EXPECT_EQ(c.info().bytes, 7u);
          ok++;
        } else {
          EXPECT_EQ(s.code(), Status::Code::kIOError) << s.ToString();
          failed++;
        }
      });
    }
    // Three parts from three threads, in any order with the waiters.
    std::vector<std::thread> parts;
    for (int p = 0; p < 3; p++) {
      parts.emplace_back([&, p] {
        state->PartDone(
            fail && p == 1 ? Status::IOError("part 1 failed") : Status::OK(),
            p == 0 ? 3 : 2);
      });
    }
    for (auto& t : parts) t.join();
    for (auto& t : waiters) t.join();
    ASSERT_EQ(ok + failed, 2) << "round " << round;
    ASSERT_EQ(failed, fail ? 2 : 0) << "round " << round;
  }
}

TEST(CompletionTest, APastDeadlineOnlyLooks) {
  auto state = NewState(1);
  Completion c(state);
  EXPECT_FALSE(c.done());
  EXPECT_FALSE(c.Poll().has_value());
  EXPECT_EQ(c.info().bytes, 0u);  // nothing until done
  EXPECT_EQ(c.Wait(Deadline::InMs(-1)).code(), Status::Code::kTimedOut);
  EXPECT_EQ(c.Wait(Deadline::InMs(20)).code(), Status::Code::kTimedOut);
  EXPECT_TRUE(state->PartDone(Status::OK(), 5));
  ASSERT_TRUE(c.Poll().has_value());
  EXPECT_TRUE(c.Poll()->ok());
  EXPECT_EQ(c.info().bytes, 5u);
  EXPECT_TRUE(c.Wait(Deadline::InMs(-1)).ok());
}

// Endpoint shutdown fails the parts still outstanding; a part that reports
// after the operation is done changes nothing a reader has seen.
TEST(CompletionTest, AnErrorAfterDoneIsIgnored) {
  auto state = NewState(1);
  Completion c(state);
  EXPECT_TRUE(state->PartDone(Status::OK(), 1));
  EXPECT_FALSE(state->PartDone(Status::Cancelled("endpoint closed"), 0));
  EXPECT_TRUE(c.Wait(Deadline::InMs(1000)).ok());
  EXPECT_TRUE(Completion().Wait(Deadline::InMs(-1)).ok());  // no operation
}

}  // namespace
}  // namespace fabps::transport
