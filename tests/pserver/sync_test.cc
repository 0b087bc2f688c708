// Sync mode: the gradients of N trainers for a step are summed and applied
// once, then the next step opens.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "pserver/shard.h"
#include "pserver/sparse_rows.h"
#include "tests/pserver/test_util.h"

namespace fabps::pserver {
namespace {

using testing::AlignedBytes;
using testing::OneParamShard;
using testing::ValuesOf;

Deadline Soon() { return Deadline::InMs(10000); }

ShardOptions SyncOptions(uint32_t trainers, RuleKind kind = RuleKind::kSgd) {
  ShardOptions o;
  o.mode = ApplyMode::kSync;
  o.num_trainers = trainers;
  o.default_rule.kind = kind;
  o.default_rule.learning_rate = 1.0;
  o.num_threads = 2;
  return o;
}

GradientRef Dense(const std::vector<double>& g, uint64_t step,
                  uint32_t trainer) {
  return GradientRef{0,        step,        trainer, GradientFormat::kDense,
                     g.data(), g.size() * 8};
}

TEST(SyncMode, SumsAllTrainersThenAppliesOnce) {
  auto shard = OneParamShard(DType::kFloat64, {4}, SyncOptions(3));
  ASSERT_NE(shard, nullptr);
  std::vector<double> g0{1, 2, 3, 4}, g1{10, 20, 30, 40},
      g2{100, 200, 300, 400};
  ASSERT_TRUE(shard->Apply(Dense(g0, 0, 0), Soon()).ok());
  ASSERT_TRUE(shard->Apply(Dense(g2, 0, 2), Soon()).ok());
  EXPECT_EQ(ValuesOf(*shard, 0), std::vector<double>(4, 0.0));
  EXPECT_EQ(shard->UpdateCount(0).value(), 0u);
  ASSERT_TRUE(shard->Apply(Dense(g1, 0, 1), Soon()).ok());
  EXPECT_EQ(ValuesOf(*shard, 0), (std::vector<double>{-111, -222, -333, -444}));
  EXPECT_EQ(shard->UpdateCount(0).value(), 1u);
  // Step 1 starts from an empty sum.
  for (uint32_t t = 0; t < 3; ++t)
    ASSERT_TRUE(shard->Apply(Dense(g0, 1, t), Soon()).ok());
  EXPECT_EQ(ValuesOf(*shard, 0), (std::vector<double>{-114, -228, -342, -456}));
}

TEST(SyncMode, AdamSeesOneUpdatePerStep) {
  auto shard =
      OneParamShard(DType::kFloat64, {4}, SyncOptions(2, RuleKind::kAdam));
  ASSERT_NE(shard, nullptr);
  std::vector<double> g{1, -1, 2, -2};
  ASSERT_TRUE(shard->Apply(Dense(g, 0, 0), Soon()).ok());
  ASSERT_TRUE(shard->Apply(Dense(g, 0, 1), Soon()).ok());
  // First Adam step moves every element by lr * sign(g) (up to epsilon).
  std::vector<double> w = ValuesOf(*shard, 0);
  EXPECT_NEAR(w[0], -1.0, 1e-6);
  EXPECT_NEAR(w[1], 1.0, 1e-6);
  EXPECT_EQ(shard->UpdateCount(0).value(), 1u);
}

TEST(SyncMode, RefusesStaleDuplicateAndUnknownTrainer) {
  auto shard = OneParamShard(DType::kFloat64, {4}, SyncOptions(2));
  ASSERT_NE(shard, nullptr);
  std::vector<double> g{1, 1, 1, 1};
  ASSERT_TRUE(shard->Apply(Dense(g, 0, 0), Soon()).ok());
  Status dup = shard->Apply(Dense(g, 0, 0), Soon());
  EXPECT_EQ(dup.code(), Status::Code::kAlreadyExists) << dup.ToString();
  ASSERT_TRUE(shard->Apply(Dense(g, 0, 1), Soon()).ok());
  Status stale = shard->Apply(Dense(g, 0, 1), Soon());
  EXPECT_EQ(stale.code(), Status::Code::kFailedPrecondition)
      << stale.ToString();
  EXPECT_EQ(shard->Apply(Dense(g, 1, 2), Soon()).code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(ValuesOf(*shard, 0), std::vector<double>(4, -2.0));
}

TEST(SyncMode, ApplyForALaterStepTimesOutWithoutEffect) {
  auto shard = OneParamShard(DType::kFloat64, {4}, SyncOptions(2));
  ASSERT_NE(shard, nullptr);
  std::vector<double> g{1, 1, 1, 1};
  Status st = shard->Apply(Dense(g, 1, 0), Deadline::InMs(20));
  EXPECT_EQ(st.code(), Status::Code::kTimedOut) << st.ToString();
  // Step 0 still takes both trainers.
  ASSERT_TRUE(shard->Apply(Dense(g, 0, 0), Soon()).ok());
  ASSERT_TRUE(shard->Apply(Dense(g, 0, 1), Soon()).ok());
  EXPECT_EQ(shard->UpdateCount(0).value(), 1u);
}

TEST(SyncMode, BlockingApplyWaitsForItsStep) {
  auto shard = OneParamShard(DType::kFloat64, {4}, SyncOptions(2));
  ASSERT_NE(shard, nullptr);
  std::vector<double> g{1, 1, 1, 1};
  Status ahead;
  std::thread t([&] { ahead = shard->Apply(Dense(g, 1, 0), Soon()); });
  ASSERT_TRUE(shard->Apply(Dense(g, 0, 0), Soon()).ok());
  ASSERT_TRUE(shard->Apply(Dense(g, 0, 1), Soon()).ok());
  t.join();
  EXPECT_TRUE(ahead.ok()) << ahead.ToString();
  ASSERT_TRUE(shard->Apply(Dense(g, 1, 1), Soon()).ok());
  EXPECT_EQ(shard->UpdateCount(0).value(), 2u);
  EXPECT_EQ(ValuesOf(*shard, 0), std::vector<double>(4, -4.0));
}

TEST(SyncMode, AsyncGradientForALaterStepIsParkedUntilItOpens) {
  auto shard = OneParamShard(DType::kFloat64, {4}, SyncOptions(2));
  ASSERT_NE(shard, nullptr);
  std::vector<double> g{1, 1, 1, 1};
  std::atomic<int> parked_done{0};
  Status parked_status;
  ASSERT_TRUE(shard
                  ->ApplyAsync(Dense(g, 1, 0),
                               [&](const Status& st) {
                                 parked_status = st;
                                 parked_done.fetch_add(1);
                               })
                  .ok());
  // Not idle: the parked gradient holds its slot.
  EXPECT_EQ(shard->WaitIdle(Deadline::InMs(20)).code(),
            Status::Code::kTimedOut);
  EXPECT_EQ(parked_done.load(), 0);
  ASSERT_TRUE(shard->Apply(Dense(g, 0, 0), Soon()).ok());
  ASSERT_TRUE(shard->Apply(Dense(g, 0, 1), Soon()).ok());
  ASSERT_TRUE(shard->WaitIdle(Soon()).ok());
  EXPECT_EQ(parked_done.load(), 1);
  EXPECT_TRUE(parked_status.ok());
  ASSERT_TRUE(shard->Apply(Dense(g, 1, 1), Soon()).ok());
  EXPECT_EQ(shard->UpdateCount(0).value(), 2u);
  EXPECT_EQ(ValuesOf(*shard, 0), std::vector<double>(4, -4.0));
}

TEST(SyncMode, DestructorCancelsParkedGradients) {
  std::vector<double> g{1, 1, 1, 1};
  Status got;
  int calls = 0;
  {
    auto shard = OneParamShard(DType::kFloat64, {4}, SyncOptions(2));
    ASSERT_NE(shard, nullptr);
    ASSERT_TRUE(shard
                    ->ApplyAsync(Dense(g, 5, 0),
                                 [&](const Status& st) {
                                   got = st;
                                   ++calls;
                                 })
                    .ok());
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(got.code(), Status::Code::kCancelled);
}

TEST(SyncMode, SparseStepsUpdateTouchedRowsAndMixedStepsApplyDensely) {
  // 8 rows of 2, one block; Adam so that an update of a zero-gradient row
  // would be visible in its state (count) but not values: check values of
  // untouched rows and the update count instead.
  auto shard = OneParamShard(DType::kFloat32, {8, 2}, SyncOptions(2));
  ASSERT_NE(shard, nullptr);
  std::vector<float> rows_a{1, 1, 2, 2};
  std::vector<float> rows_b{10, 10};
  AlignedBytes a(EncodeSparseRows({1, 3}, rows_a.data(), 2, 4));
  AlignedBytes b(EncodeSparseRows({3}, rows_b.data(), 2, 4));
  ASSERT_TRUE(
      shard
          ->Apply({0, 0, 0, GradientFormat::kSparseRows, a.data(), a.size()},
                  Soon())
          .ok());
  ASSERT_TRUE(
      shard
          ->Apply({0, 0, 1, GradientFormat::kSparseRows, b.data(), b.size()},
                  Soon())
          .ok());
  std::vector<double> want(16, 0.0);
  want[2] = want[3] = -1;
  want[6] = want[7] = -12;
  EXPECT_EQ(ValuesOf(*shard, 0), want);
  // Next step: one sparse, one dense gradient.
  std::vector<float> dense(16, 1.0f);
  AlignedBytes c(EncodeSparseRows({0}, rows_b.data(), 2, 4));
  ASSERT_TRUE(
      shard
          ->Apply({0, 1, 1, GradientFormat::kSparseRows, c.data(), c.size()},
                  Soon())
          .ok());
  ASSERT_TRUE(
      shard->Apply({0, 1, 0, GradientFormat::kDense, dense.data(), 64}, Soon())
          .ok());
  for (double& x : want) x -= 1;
  want[0] -= 10;
  want[1] -= 10;
  EXPECT_EQ(ValuesOf(*shard, 0), want);
  // A third, all-sparse step starts from a clean sum.
  ASSERT_TRUE(
      shard
          ->Apply({0, 2, 0, GradientFormat::kSparseRows, b.data(), b.size()},
                  Soon())
          .ok());
  ASSERT_TRUE(
      shard
          ->Apply({0, 2, 1, GradientFormat::kSparseRows, b.data(), b.size()},
                  Soon())
          .ok());
  want[6] -= 20;
  want[7] -= 20;
  EXPECT_EQ(ValuesOf(*shard, 0), want);
  EXPECT_EQ(shard->UpdateCount(0).value(), 3u);
}

// An empty share (a trainer touched no row of the block in the step)
// counts as its gradient and adds nothing, also before a dense one; a step
// of empty shares only is still a step. Async shards refuse it.
TEST(SyncMode, EmptySharesCompleteAStepAndAddNothing) {
  auto shard = OneParamShard(DType::kFloat32, {8, 2}, SyncOptions(2));
  ASSERT_NE(shard, nullptr);
  const GradientRef empty0{0, 0, 0, GradientFormat::kEmpty, nullptr, 0};
  std::vector<float> rows{1, 2};
  AlignedBytes a(EncodeSparseRows({5}, rows.data(), 2, 4));
  ASSERT_TRUE(shard->Apply(empty0, Soon()).ok());
  EXPECT_EQ(shard->UpdateCount(0).value(), 0u);
  ASSERT_TRUE(
      shard
          ->Apply({0, 0, 1, GradientFormat::kSparseRows, a.data(), a.size()},
                  Soon())
          .ok());
  std::vector<double> want(16, 0.0);
  want[10] = -1;
  want[11] = -2;
  EXPECT_EQ(ValuesOf(*shard, 0), want);
  EXPECT_EQ(shard->UpdateCount(0).value(), 1u);
  // Step 1: an empty share, then a dense one: the sum is the dense one.
  std::vector<float> dense(16, 1.0f);
  ASSERT_TRUE(
      shard->Apply({0, 1, 1, GradientFormat::kEmpty, nullptr, 0}, Soon()).ok());
  ASSERT_TRUE(
      shard->Apply({0, 1, 0, GradientFormat::kDense, dense.data(), 64}, Soon())
          .ok());
  for (double& x : want) x -= 1;
  EXPECT_EQ(ValuesOf(*shard, 0), want);
  // Step 2: nobody touched the block.
  for (uint32_t t = 0; t < 2; ++t) {
    ASSERT_TRUE(
        shard->Apply({0, 2, t, GradientFormat::kEmpty, nullptr, 0}, Soon())
            .ok());
  }
  EXPECT_EQ(ValuesOf(*shard, 0), want);
  EXPECT_EQ(shard->UpdateCount(0).value(), 3u);
  // A second share of one trainer for one step is still refused.
  ASSERT_TRUE(
      shard->Apply({0, 3, 0, GradientFormat::kEmpty, nullptr, 0}, Soon()).ok());
  EXPECT_EQ(shard->Apply({0, 3, 0, GradientFormat::kEmpty, nullptr, 0}, Soon())
                .code(),
            Status::Code::kAlreadyExists);

  ShardOptions async;
  auto plain = OneParamShard(DType::kFloat32, {8, 2}, async);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->Apply(empty0, Soon()).code(),
            Status::Code::kInvalidArgument);
}

TEST(SyncMode, RestoreOpensItsStepForParkedGradients) {
  auto shard = OneParamShard(DType::kFloat64, {4}, SyncOptions(2));
  ASSERT_NE(shard, nullptr);
  std::vector<double> g{1, 1, 1, 1};
  Status at3, at1;
  ASSERT_TRUE(
      shard->ApplyAsync(Dense(g, 3, 0), [&](const Status& st) { at3 = st; })
          .ok());
  ASSERT_TRUE(
      shard->ApplyAsync(Dense(g, 1, 1), [&](const Status& st) { at1 = st; })
          .ok());
  EXPECT_EQ(shard->WaitIdle(Deadline::InMs(20)).code(),
            Status::Code::kTimedOut);
  std::vector<double> w(4, 10.0);
  ASSERT_TRUE(shard->RestoreBlock(0, w.data(), nullptr, nullptr, 3).ok());
  ASSERT_TRUE(shard->WaitIdle(Soon()).ok());
  EXPECT_TRUE(at3.ok()) << at3.ToString();
  EXPECT_EQ(at1.code(), Status::Code::kFailedPrecondition) << at1.ToString();
  ASSERT_TRUE(shard->Apply(Dense(g, 3, 1), Soon()).ok());
  EXPECT_EQ(shard->UpdateCount(0).value(), 4u);
  EXPECT_EQ(ValuesOf(*shard, 0), std::vector<double>(4, 8.0));
}

TEST(SyncMode, RefusesStepsTooFarAheadWhenBounded) {
  ShardOptions o = SyncOptions(2);
  o.max_steps_ahead = 1;
  auto shard = OneParamShard(DType::kFloat64, {4}, o);
  ASSERT_NE(shard, nullptr);
  std::vector<double> g{1, 1, 1, 1};
  Status far = shard->Apply(Dense(g, 2, 0), Soon());
  EXPECT_EQ(far.code(), Status::Code::kInvalidArgument) << far.ToString();
  EXPECT_NE(far.message().find("too far ahead"), std::string::npos);
  std::atomic<int> calls{0};
  Status async_far;
  ASSERT_TRUE(shard
                  ->ApplyAsync(Dense(g, 7, 1),
                               [&](const Status& st) {
                                 async_far = st;
                                 calls++;
                               })
                  .ok());
  ASSERT_TRUE(shard->WaitIdle(Soon()).ok());
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(async_far.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(shard->UpdateCount(0).value(), 0u);
}

TEST(SyncMode, ForceOverdueStepsAppliesWhatArrivedAndCallsOnStep) {
  ShardOptions o = SyncOptions(3);
  std::vector<std::pair<uint32_t, uint64_t>> steps;
  std::mutex mu;
  o.on_step = [&](uint32_t block, uint64_t step) {
    std::lock_guard<std::mutex> l(mu);
    steps.push_back({block, step});
  };
  auto shard = OneParamShard(DType::kFloat64, {4}, o);
  ASSERT_NE(shard, nullptr);
  std::vector<double> g0{1, 2, 3, 4}, g2{10, 20, 30, 40};
  ASSERT_TRUE(shard->Apply(Dense(g0, 0, 0), Soon()).ok());
  ASSERT_TRUE(shard->Apply(Dense(g2, 0, 2), Soon()).ok());
  // Not overdue yet.
  EXPECT_TRUE(shard->ForceOverdueSteps(std::chrono::hours(1)).empty());
  auto forced = shard->ForceOverdueSteps(std::chrono::milliseconds(0));
  ASSERT_EQ(forced.size(), 1u);
  EXPECT_EQ(forced[0].block, 0u);
  EXPECT_EQ(forced[0].step, 0u);
  EXPECT_EQ(forced[0].missing, std::vector<uint32_t>{1});
  EXPECT_EQ(ValuesOf(*shard, 0), (std::vector<double>{-11, -22, -33, -44}));
  EXPECT_EQ(shard->UpdateCount(0).value(), 1u);
  {
    std::lock_guard<std::mutex> l(mu);
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(steps.back(), (std::pair<uint32_t, uint64_t>{0, 1}));
  }
  // Nothing waits: nothing to force.
  EXPECT_TRUE(shard->ForceOverdueSteps(std::chrono::milliseconds(0)).empty());
  // Step 1 then takes all three again.
  for (uint32_t t = 0; t < 3; ++t)
    ASSERT_TRUE(shard->Apply(Dense(g0, 1, t), Soon()).ok());
  EXPECT_EQ(ValuesOf(*shard, 0), (std::vector<double>{-14, -28, -42, -56}));
  EXPECT_EQ(shard->MaxStep(), 2u);
}

TEST(SyncMode, ForcedEmptyStepLetsAParkedLaterStepIn) {
  auto shard = OneParamShard(DType::kFloat64, {4}, SyncOptions(2));
  ASSERT_NE(shard, nullptr);
  std::vector<double> g{1, 1, 1, 1};
  Status parked_status = Status::Unavailable("not called");
  ASSERT_TRUE(shard
                  ->ApplyAsync(Dense(g, 1, 0),
                               [&](const Status& st) { parked_status = st; })
                  .ok());
  // The first call notes the wait, the next one (deadline 0) forces it.
  for (int i = 0; i < 1000 && shard->UpdateCount(0).value() == 0; i++) {
    shard->ForceOverdueSteps(std::chrono::milliseconds(0));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(shard->UpdateCount(0).value(), 1u);
  ASSERT_TRUE(shard->WaitIdle(Soon()).ok());
  EXPECT_TRUE(parked_status.ok()) << parked_status.ToString();
  EXPECT_EQ(ValuesOf(*shard, 0), std::vector<double>(4, 0.0));
  ASSERT_TRUE(shard->Apply(Dense(g, 1, 1), Soon()).ok());
  EXPECT_EQ(ValuesOf(*shard, 0), std::vector<double>(4, -2.0));
}

}  // namespace
}  // namespace fabps::pserver
