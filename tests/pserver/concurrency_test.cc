// Concurrent apply from many threads. Gradients are small integers and the
// rule is SGD with lr 1, so every result is exact whatever the interleaving:
// a lost or doubled update shows as a wrong value, a data race shows under
// ThreadSanitizer (these tests carry LABELS tsan).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "pserver/checkpoint.h"
#include "pserver/shard.h"
#include "tests/pserver/test_util.h"

namespace fabps::pserver {
namespace {

using testing::ValuesOf;

Deadline Soon() { return Deadline::InMs(30000); }

// 3 parameters cut in blocks of 512 elements, all on one shard; small grain
// so that blocks are also split by parallel_for.
std::unique_ptr<Shard> MakeShard(ApplyMode mode, uint32_t trainers) {
  auto layout = Layout::Build({{"a", DType::kFloat32, {2048}},
                               {"b", DType::kFloat64, {1000}},
                               {"c", DType::kFloat32, {64, 8}}},
                              512, 1);
  EXPECT_TRUE(layout.ok());
  ShardOptions o;
  o.default_rule.learning_rate = 1.0;
  o.mode = mode;
  o.num_trainers = trainers;
  o.num_threads = 4;
  o.parallel_grain_elements = 128;
  auto shard = Shard::Create(std::move(layout).value(), o);
  EXPECT_TRUE(shard.ok()) << shard.status().ToString();
  return shard.ok() ? std::move(shard).value() : nullptr;
}

// Gradient of value `v` everywhere for every block, in each block's type.
struct Grads {
  Grads(const Shard& shard, double v) {
    for (const BlockInfo& b : shard.layout().blocks()) {
      DType dt = shard.layout().params()[b.param].dtype;
      if (dt == DType::kFloat32) {
        f32.emplace_back(b.num_elements, static_cast<float>(v));
        f64.emplace_back();
      } else {
        f32.emplace_back();
        f64.emplace_back(b.num_elements, v);
      }
    }
  }
  GradientRef Ref(uint32_t block, uint64_t step = 0,
                  uint32_t trainer = 0) const {
    GradientRef g;
    g.block = block;
    g.step = step;
    g.trainer = trainer;
    if (!f32[block].empty()) {
      g.data = f32[block].data();
      g.bytes = f32[block].size() * 4;
    } else {
      g.data = f64[block].data();
      g.bytes = f64[block].size() * 8;
    }
    return g;
  }
  std::vector<std::vector<float>> f32;
  std::vector<std::vector<double>> f64;
};

TEST(Concurrency, AsyncApplyFromManyThreads) {
  auto shard = MakeShard(ApplyMode::kAsync, 1);
  ASSERT_NE(shard, nullptr);
  const int kThreads = 6, kRounds = 20;
  std::vector<Grads> grads;
  for (int t = 0; t < kThreads; ++t) grads.emplace_back(*shard, t + 1);
  const uint32_t nblocks = shard->layout().num_blocks();
  std::atomic<int> callbacks{0};
  std::atomic<bool> stop{false};
  // A reader copying consistent snapshots while applies run.
  std::thread reader([&] {
    std::vector<double> buf(512);
    while (!stop.load()) {
      ASSERT_TRUE(shard->ReadValues(4, buf.data(), 512 * 8).ok());
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        for (uint32_t b = 0; b < nblocks; ++b) {
          GradientRef g = grads[t].Ref(b);
          if ((r + t) % 3 == 0) {
            ASSERT_TRUE(shard->Apply(g, Soon()).ok());
          } else {
            ASSERT_TRUE(shard
                            ->ApplyAsync(g,
                                         [&](const Status& st) {
                                           EXPECT_TRUE(st.ok());
                                           callbacks.fetch_add(1);
                                         })
                            .ok());
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(shard->WaitIdle(Soon()).ok());
  stop.store(true);
  reader.join();
  int async_count = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int r = 0; r < kRounds; ++r)
      if ((r + t) % 3 != 0) async_count += nblocks;
  EXPECT_EQ(callbacks.load(), async_count);
  const double total = -kRounds * (kThreads * (kThreads + 1) / 2.0);
  for (uint32_t b = 0; b < nblocks; ++b) {
    std::vector<double> v = ValuesOf(*shard, b);
    EXPECT_EQ(v, std::vector<double>(v.size(), total)) << "block " << b;
    EXPECT_EQ(shard->UpdateCount(b).value(), uint64_t{kThreads} * kRounds);
  }
}

TEST(Concurrency, SyncModeTrainersRunAhead) {
  const uint32_t kTrainers = 4;
  const uint64_t kSteps = 8;
  auto shard = MakeShard(ApplyMode::kSync, kTrainers);
  ASSERT_NE(shard, nullptr);
  std::vector<Grads> grads;
  for (uint32_t t = 0; t < kTrainers; ++t) grads.emplace_back(*shard, t + 1);
  const uint32_t nblocks = shard->layout().num_blocks();
  std::atomic<int> callbacks{0};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kTrainers; ++t) {
    threads.emplace_back([&, t] {
      // Trainer 0 blocks on each step; the others push every step at once
      // and let the shard park what is early.
      for (uint64_t s = 0; s < kSteps; ++s) {
        for (uint32_t b = 0; b < nblocks; ++b) {
          GradientRef g = grads[t].Ref(b, s, t);
          if (t == 0) {
            ASSERT_TRUE(shard->Apply(g, Soon()).ok());
          } else {
            ASSERT_TRUE(shard
                            ->ApplyAsync(g,
                                         [&](const Status& st) {
                                           EXPECT_TRUE(st.ok())
                                               << st.ToString();
                                           callbacks.fetch_add(1);
                                         })
                            .ok());
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(shard->WaitIdle(Soon()).ok());
  EXPECT_EQ(callbacks.load(), int((kTrainers - 1) * kSteps * nblocks));
  const double per_step = kTrainers * (kTrainers + 1) / 2.0;
  for (uint32_t b = 0; b < nblocks; ++b) {
    EXPECT_EQ(shard->UpdateCount(b).value(), kSteps);
    std::vector<double> v = ValuesOf(*shard, b);
    EXPECT_EQ(v, std::vector<double>(v.size(), -per_step * kSteps)) << b;
  }
}

// Checkpoints taken while gradients keep arriving: every block in every
// file is a consistent snapshot (all its elements equal -update_count,
// since every gradient is all ones and lr is 1), and every file loads.
TEST(Concurrency, CheckpointWhileTraining) {
  auto shard = MakeShard(ApplyMode::kAsync, 1);
  ASSERT_NE(shard, nullptr);
  Grads ones(*shard, 1.0);
  const uint32_t nblocks = shard->layout().num_blocks();
  testing::TempDir dir;
  CheckpointManager manager(dir.path(), 0, 10);
  std::atomic<bool> stop{false};
  std::thread trainer([&] {
    while (!stop.load()) {
      for (uint32_t b = 0; b < nblocks; ++b) {
        ASSERT_TRUE(
            shard
                ->ApplyAsync(ones.Ref(b),
                             [](const Status& st) { EXPECT_TRUE(st.ok()); })
                .ok());
      }
      ASSERT_TRUE(shard->WaitIdle(Soon()).ok());
    }
  });
  std::vector<CheckpointInfo> saved;
  for (int i = 0; i < 3; ++i) {
    auto info = manager.Save(*shard);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    saved.push_back(*info);
  }
  stop.store(true);
  trainer.join();
  for (const CheckpointInfo& info : saved) {
    auto restored = MakeShard(ApplyMode::kAsync, 1);
    ASSERT_NE(restored, nullptr);
    ASSERT_TRUE(LoadCheckpoint(info.path, restored.get()).ok()) << info.path;
    for (uint32_t b = 0; b < nblocks; ++b) {
      double count = static_cast<double>(restored->UpdateCount(b).value());
      std::vector<double> v = ValuesOf(*restored, b);
      EXPECT_EQ(v, std::vector<double>(v.size(), -count))
          << info.path << " block " << b;
    }
  }
}

}  // namespace
}  // namespace fabps::pserver
