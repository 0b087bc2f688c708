// Shard: arena exposure, input validation, sparse rows, ApplyAsync.
#include "pserver/shard.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "pserver/sparse_rows.h"
#include "tests/pserver/reference_rules.h"
#include "tests/pserver/test_util.h"

namespace fabps::pserver {
namespace {

using testing::AlignedBytes;
using testing::OneParamShard;
using testing::RandomVector;
using testing::ReferenceRule;
using testing::Rounded;
using testing::ToBytes;
using testing::ValuesOf;

Deadline Soon() { return Deadline::InMs(10000); }

TEST(Shard, ArenaIsPageAlignedAndHoldsEveryOwnedBlock) {
  std::vector<ParamSpec> params = {{"a", DType::kFloat32, {3000}},
                                   {"b", DType::kFloat64, {100, 7}},
                                   {"c", DType::kFloat32, {5}}};
  auto layout = Layout::Build(params, 1000, 2);
  ASSERT_TRUE(layout.ok());
  ShardOptions o;
  o.shard_index = 1;
  o.default_rule.kind = RuleKind::kAdam;
  auto shard = Shard::Create(*layout, o);
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  Shard& s = **shard;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s.arena_base()) % 4096, 0u);
  EXPECT_EQ(s.arena_bytes() % 4096, 0u);
  EXPECT_EQ(s.block_ids(), layout->BlocksOf(1));
  size_t prev_end = 0;
  for (uint32_t id : s.block_ids()) {
    auto r = s.ValueRegion(id);
    ASSERT_TRUE(r.ok());
    const BlockInfo& info = layout->blocks()[id];
    EXPECT_EQ(r->bytes,
              info.num_elements * DTypeSize(params[info.param].dtype));
    EXPECT_EQ(r->offset % 64, 0u);
    EXPECT_GE(r->offset, prev_end);  // ascending, no overlap
    EXPECT_LE(r->offset + r->bytes, s.arena_bytes());
    prev_end = r->offset + r->bytes;
    // Values written by InitBlock are where ValueRegion says.
    std::vector<double> v(info.num_elements, 1.5);
    std::string bytes = ToBytes(params[info.param].dtype, v);
    ASSERT_TRUE(s.InitBlock(id, bytes.data(), bytes.size()).ok());
    EXPECT_EQ(std::memcmp(static_cast<char*>(s.arena_base()) + r->offset,
                          bytes.data(), bytes.size()),
              0);
  }
  for (uint32_t id : layout->BlocksOf(0)) {
    EXPECT_FALSE(s.Owns(id));
    EXPECT_FALSE(s.ValueRegion(id).ok());
  }
}

TEST(Shard, CreateRejectsBadOptions) {
  auto layout = Layout::Build({{"a", DType::kFloat32, {10}}}, 1000, 2);
  ASSERT_TRUE(layout.ok());
  ShardOptions o;
  o.shard_index = 2;
  EXPECT_FALSE(Shard::Create(*layout, o).ok());
  o.shard_index = 0;
  o.default_rule.learning_rate = -1;
  EXPECT_FALSE(Shard::Create(*layout, o).ok());
  auto ints = Layout::Build({{"i", DType::kInt64, {10}}}, 1000, 1);
  ASSERT_TRUE(ints.ok());
  auto s = Shard::Create(*ints, ShardOptions());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kUnimplemented);
}

TEST(Shard, RejectsBadGradientsWithoutCrashing) {
  auto layout = Layout::Build(
      {{"a", DType::kFloat32, {100}}, {"e", DType::kFloat32, {40, 4}}}, 1 << 20,
      2);
  ASSERT_TRUE(layout.ok());
  uint32_t mine = layout->blocks()[0].pserver;
  ShardOptions o;
  o.shard_index = mine;
  auto shard = Shard::Create(*layout, o);
  ASSERT_TRUE(shard.ok());
  Shard& s = **shard;
  alignas(8) float g[128] = {};
  auto expect_invalid = [&](GradientRef gr, const char* what) {
    Status st = s.Apply(gr, Soon());
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument)
        << what << ": " << st.ToString();
    bool called = false;
    Status st2 = s.ApplyAsync(gr, [&](const Status&) { called = true; });
    EXPECT_EQ(st2.code(), Status::Code::kInvalidArgument) << what;
    EXPECT_FALSE(called) << what;
  };
  GradientRef good{0, 0, 0, GradientFormat::kDense, g, 100 * 4};
  EXPECT_TRUE(s.Apply(good, Soon()).ok());
  GradientRef r = good;
  r.block = 99;
  expect_invalid(r, "block out of range");
  r = good;
  r.block = 0xffffffff;
  expect_invalid(r, "block id max");
  if (layout->blocks()[1].pserver != mine) {
    r = good;
    r.block = 1;
    expect_invalid(r, "block of another pserver");
  }
  r = good;
  r.bytes = 99 * 4;
  expect_invalid(r, "short");
  r.bytes = 101 * 4;
  expect_invalid(r, "long");
  r = good;
  r.data = nullptr;
  expect_invalid(r, "null");
  r = good;
  r.data = reinterpret_cast<const char*>(g) + 1;
  expect_invalid(r, "misaligned");
  r = good;
  r.format = static_cast<GradientFormat>(7);
  expect_invalid(r, "unknown format");
  // The values did not move except for the one good apply (g is zero).
  EXPECT_EQ(s.UpdateCount(0).value(), 1u);
}

TEST(SparseRows, ParseRejectsMalformedBytes) {
  auto layout = Layout::Build({{"e", DType::kFloat32, {40, 4}}}, 40, 1);
  ASSERT_TRUE(layout.ok());
  const BlockInfo& b1 = layout->blocks()[1];  // rows [10, 20)
  ASSERT_EQ(b1.first_row, 10u);
  std::vector<float> rows(3 * 4, 1.0f);
  AlignedBytes ok(EncodeSparseRows({10, 19, 10}, rows.data(), 4, 4));
  EXPECT_TRUE(ParseSparseRows(ok.data(), ok.size(), b1, 4).ok());
  AlignedBytes low(EncodeSparseRows({9}, rows.data(), 4, 4));
  EXPECT_FALSE(ParseSparseRows(low.data(), low.size(), b1, 4).ok());
  AlignedBytes high(EncodeSparseRows({20}, rows.data(), 4, 4));
  EXPECT_FALSE(ParseSparseRows(high.data(), high.size(), b1, 4).ok());
  EXPECT_FALSE(ParseSparseRows(ok.data(), ok.size() - 4, b1, 4).ok());
  EXPECT_FALSE(ParseSparseRows(ok.data(), 4, b1, 4).ok());
  AlignedBytes none(EncodeSparseRows({}, nullptr, 4, 4));
  EXPECT_FALSE(ParseSparseRows(none.data(), none.size(), b1, 4).ok());
  // A row count that would overflow the length computation.
  std::string huge(ok.size(), '\0');
  std::memcpy(&huge[0], ok.data(), ok.size());
  uint64_t k = ~uint64_t{0} / 8;
  std::memcpy(&huge[0], &k, 8);
  AlignedBytes huge_b(huge);
  EXPECT_FALSE(ParseSparseRows(huge_b.data(), huge_b.size(), b1, 4).ok());
}

class SparseVsReference : public ::testing::TestWithParam<RuleKind> {};

TEST_P(SparseVsReference, DuplicatesAddUpAndOnlyTouchedRowsChange) {
  const uint64_t rows = 64, r = 8;
  UpdateRuleConfig c;
  c.kind = GetParam();
  c.learning_rate = 0.05;
  c.weight_decay = 0.01;
  c.clip_norm = 2.0;
  ShardOptions o;
  o.default_rule = c;
  // Blocks of 16 rows: block 1 holds rows [16, 32).
  auto shard = OneParamShard(DType::kFloat32, {rows, r}, o, 16 * r);
  ASSERT_NE(shard, nullptr);
  const uint32_t block = 1;
  const BlockInfo& info = shard->layout().blocks()[block];
  std::mt19937_64 rng(3);
  std::vector<double> w0 =
      Rounded(DType::kFloat32, RandomVector(rng, info.num_elements, -1, 1));
  std::string init = ToBytes(DType::kFloat32, w0);
  ASSERT_TRUE(shard->InitBlock(block, init.data(), init.size()).ok());
  ReferenceRule ref(c, w0);
  for (int step = 0; step < 6; ++step) {
    std::uniform_int_distribution<uint64_t> pick(16, 31);
    std::vector<uint64_t> ids(10);
    for (auto& id : ids) id = pick(rng);
    ids.push_back(ids[0]);  // at least one duplicate
    std::vector<double> vals =
        Rounded(DType::kFloat32, RandomVector(rng, ids.size() * r, -1, 1));
    std::vector<float> fvals(vals.begin(), vals.end());
    AlignedBytes bytes(EncodeSparseRows(ids, fvals.data(), r, 4));
    GradientRef g{block,        0,           0, GradientFormat::kSparseRows,
                  bytes.data(), bytes.size()};
    ASSERT_TRUE(shard->Apply(g, Soon()).ok());
    // Reference: sum duplicates (in send order), update touched rows only.
    std::map<uint64_t, std::vector<double>> summed;
    for (size_t i = 0; i < ids.size(); ++i) {
      auto& row = summed[ids[i] - info.first_row];
      row.resize(r, 0.0);
      for (size_t j = 0; j < r; ++j) row[j] += vals[i * r + j];
    }
    std::vector<size_t> idx;
    std::vector<double> grad;
    for (auto& [row, v] : summed) {
      for (size_t j = 0; j < r; ++j) {
        idx.push_back(row * r + j);
        grad.push_back(static_cast<float>(v[j]));
      }
    }
    ref.StepElements(idx, grad);
    std::vector<double> got = ValuesOf(*shard, block);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], ref.w()[i],
                  2e-5 * std::max(1.0, std::abs(ref.w()[i])))
          << "step " << step << " element " << i;
    }
  }
  // Other blocks never moved.
  EXPECT_EQ(ValuesOf(*shard, 0), std::vector<double>(16 * r, 0.0));
}

INSTANTIATE_TEST_SUITE_P(Rules, SparseVsReference,
                         ::testing::Values(RuleKind::kSgd, RuleKind::kMomentum,
                                           RuleKind::kNesterov, RuleKind::kAdam,
                                           RuleKind::kAdaGrad),
                         [](const auto& info) {
                           return std::string(RuleName(info.param));
                         });

TEST(Shard, ApplyAsyncCallsBackOnceInSubmissionOrder) {
  ShardOptions o;
  o.default_rule.learning_rate = 1.0;
  o.num_threads = 2;
  auto shard = OneParamShard(DType::kFloat64, {16}, o);
  ASSERT_NE(shard, nullptr);
  // Momentum-free SGD is order independent, so check order with the
  // callback sequence instead.
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::vector<double>> grads(50, std::vector<double>(16));
  for (int i = 0; i < 50; ++i) grads[i].assign(16, i);
  for (int i = 0; i < 50; ++i) {
    GradientRef g{0, 0, 0, GradientFormat::kDense, grads[i].data(), 16 * 8};
    ASSERT_TRUE(shard
                    ->ApplyAsync(g,
                                 [&, i](const Status& st) {
                                   EXPECT_TRUE(st.ok());
                                   std::lock_guard<std::mutex> lock(mu);
                                   order.push_back(i);
                                 })
                    .ok());
  }
  ASSERT_TRUE(shard->WaitIdle(Soon()).ok());
  std::vector<int> want(50);
  for (int i = 0; i < 50; ++i) want[i] = i;
  EXPECT_EQ(order, want);
  EXPECT_EQ(ValuesOf(*shard, 0), std::vector<double>(16, -(49 * 50 / 2)));
  EXPECT_EQ(shard->UpdateCount(0).value(), 50u);
}

TEST(Shard, ApplyAsyncOfSmallBlocksRunsOnTheCallingThread) {
  ShardOptions o;
  o.default_rule.learning_rate = 1.0;
  o.num_threads = 2;
  o.inline_apply_bytes = 16 * 8;  // the small parameter's block exactly
  Layout layout = Layout::Build({{"small", DType::kFloat64, {16}},
                                 {"large", DType::kFloat64, {17}}},
                                1 << 10, 1)
                      .value();
  auto shard = Shard::Create(std::move(layout), o).value();
  ASSERT_TRUE(
      shard->InitBlock(0, std::vector<double>(16, 0).data(), 16 * 8).ok());
  ASSERT_TRUE(
      shard->InitBlock(1, std::vector<double>(17, 0).data(), 17 * 8).ok());
  std::vector<double> grad(17, 1.0);
  // Each apply records the thread it called back on.
  auto apply = [&](uint32_t block, size_t n) {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<std::thread::id> on;
    GradientRef g{block, 0, 0, GradientFormat::kDense, grad.data(), n * 8};
    EXPECT_TRUE(shard
                    ->ApplyAsync(g,
                                 [&](const Status& st) {
                                   EXPECT_TRUE(st.ok());
                                   std::lock_guard<std::mutex> l(mu);
                                   on = std::this_thread::get_id();
                                   cv.notify_all();
                                 })
                    .ok());
    std::unique_lock<std::mutex> l(mu);
    EXPECT_TRUE(cv.wait_for(l, std::chrono::seconds(30),
                            [&] { return on.has_value(); }));
    return on.value_or(std::thread::id());
  };
  EXPECT_EQ(apply(0, 16), std::this_thread::get_id());  // done before return
  EXPECT_NE(apply(1, 17), std::this_thread::get_id());  // an apply thread's
  ASSERT_TRUE(shard->WaitIdle(Soon()).ok());
  EXPECT_EQ(ValuesOf(*shard, 0), std::vector<double>(16, -1.0));
  EXPECT_EQ(shard->UpdateCount(0).value(), 1u);
  EXPECT_EQ(shard->UpdateCount(1).value(), 1u);
}

TEST(Shard, ReadBlockLockedShowsStateAndCount) {
  ShardOptions o;
  o.default_rule.kind = RuleKind::kMomentum;
  o.default_rule.learning_rate = 1.0;
  o.default_rule.momentum = 0.5;
  auto shard = OneParamShard(DType::kFloat32, {4}, o);
  ASSERT_NE(shard, nullptr);
  alignas(8) float g[4] = {1, 2, 3, 4};
  GradientRef gr{0, 0, 0, GradientFormat::kDense, g, sizeof(g)};
  ASSERT_TRUE(shard->Apply(gr, Soon()).ok());
  ASSERT_TRUE(shard->Apply(gr, Soon()).ok());
  bool visited = false;
  ASSERT_TRUE(shard
                  ->ReadBlockLocked(0,
                                    [&](const BlockView& v) {
                                      visited = true;
                                      EXPECT_EQ(v.update_count, 2u);
                                      EXPECT_EQ(v.rule, RuleKind::kMomentum);
                                      const float* m =
                                          static_cast<const float*>(v.state[0]);
                                      EXPECT_EQ(m[3], 6.0f);  // 0.5*4 + 4
                                      EXPECT_EQ(v.state[1], nullptr);
                                    })
                  .ok());
  EXPECT_TRUE(visited);
}

}  // namespace
}  // namespace fabps::pserver
