// Hashed tables on a shard (pserver/shard.h, "Hashed tables"): pushes of
// rows by id, admission, per-row optimizer state, eviction by TTL and
// budget, restore, checkpoints, the exported model and re-sharding.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "base/crc32c.h"
#include "protocol/id_rows.h"
#include "protocol/model_format.h"
#include "pserver/checkpoint.h"
#include "pserver/checkpointed_model.h"
#include "pserver/reshard.h"
#include "pserver/shard.h"
#include "safetensors/safetensors.h"
#include "tests/pserver/test_util.h"

namespace fabps::pserver {
namespace {

using testing::AlignedBytes;
using testing::TempDir;

constexpr uint32_t kBuckets = 8;
constexpr uint64_t kR = 4;  // a row of the table: 4 floats
constexpr size_t kRowBytes = kR * 4;

Deadline Soon() { return Deadline::InMs(10000); }

// A hashed table "emb" (rows of 4 floats, 8 buckets: blocks 0..7) and a
// dense "w" [6] (block 8).
Layout MakeLayout(uint32_t n) {
  auto l = Layout::Build(
      {protocol::HashedSpec("emb", DType::kFloat32, {kR}, kBuckets),
       {"w", DType::kFloat32, {6}}},
      64, n);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return std::move(l).value();
}

std::unique_ptr<Shard> MakeShard(ShardOptions o, uint32_t n = 1,
                                 uint32_t index = 0) {
  o.shard_index = index;
  auto s = Shard::Create(MakeLayout(n), o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

ShardOptions Sgd(double lr = 0.5) {
  ShardOptions o;
  o.default_rule.kind = RuleKind::kSgd;
  o.default_rule.learning_rate = lr;
  return o;
}

ShardOptions AdaGrad() {
  ShardOptions o;
  o.default_rule.kind = RuleKind::kAdaGrad;
  o.default_rule.learning_rate = 0.1;
  o.default_rule.adagrad_initial = 0.1;
  o.default_rule.epsilon = 1e-8;
  return o;
}

// Block of bucket b (FirstBlockOf("emb") + b).
uint32_t BucketBlock(const Shard& s, uint32_t b) {
  auto p = s.layout().FindParam("emb");
  EXPECT_TRUE(p.ok());
  return s.layout().FirstBlockOf(*p) + b;
}

// The first `count` ids >= start that fall in bucket `b`.
std::vector<uint64_t> IdsOf(uint32_t b, size_t count, uint64_t start = 1) {
  std::vector<uint64_t> ids;
  for (uint64_t id = start; ids.size() < count; ++id) {
    if (protocol::BucketOfId(id, kBuckets) == b) ids.push_back(id);
  }
  return ids;
}

GradientRef RowsRef(uint32_t block, const AlignedBytes& bytes) {
  GradientRef g;
  g.block = block;
  g.format = GradientFormat::kSparseRows;
  g.data = bytes.data();
  g.bytes = bytes.size();
  return g;
}

// Pushes rows `ids` with gradients `g` (ids.size() * kR floats) to `block`.
Status Push(Shard& s, uint32_t block, const std::vector<uint64_t>& ids,
            const std::vector<float>& g) {
  EXPECT_EQ(g.size(), ids.size() * kR);
  AlignedBytes bytes(EncodeSparseRows(ids, g.data(), kR, 4));
  return s.Apply(RowsRef(block, bytes), Soon());
}

std::vector<float> Gather(const Shard& s, uint32_t block,
                          const std::vector<uint64_t>& ids) {
  std::vector<float> out(ids.size() * kR, -999.0f);
  Status st = s.GatherHashed(block, ids.data(), ids.size(), out.data());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

std::vector<float> Initial(const TableConfig& c, uint64_t id) {
  std::vector<float> row(kR);
  protocol::InitialRow(c, id, DType::kFloat32, kR, row.data());
  return row;
}

std::vector<float> Slice(const std::vector<float>& v, size_t row) {
  return std::vector<float>(v.begin() + row * kR, v.begin() + (row + 1) * kR);
}

struct Row {
  uint64_t id = 0;
  int64_t ms = 0;
  std::string values;
  std::string state[2];
  bool operator==(const Row& o) const {
    return id == o.id && ms == o.ms && values == o.values &&
           state[0] == o.state[0] && state[1] == o.state[1];
  }
};

void PrintTo(const Row& r, std::ostream* os) {
  *os << "{id " << r.id << ", ms " << r.ms << ", " << r.values.size()
      << " value bytes}";
}

// The rows a bucket holds, by ascending id, as bytes.
std::vector<Row> RowsOf(const Shard& s, uint32_t block,
                        uint64_t* update_count = nullptr) {
  std::vector<Row> rows;
  Status st = s.ReadBlockLocked(block, [&](const BlockView& v) {
    EXPECT_TRUE(IsHashedBlock(*v.info));
    EXPECT_EQ(v.value_bytes, v.rows * kRowBytes);
    const char* values = static_cast<const char*>(v.values);
    for (uint64_t i = 0; i < v.rows; ++i) {
      Row r;
      r.id = v.ids[i];
      r.ms = v.updated_ms[i];
      r.values.assign(values + i * kRowBytes, kRowBytes);
      for (int k = 0; k < StateSlots(v.rule); ++k) {
        r.state[k].assign(static_cast<const char*>(v.state[k]) + i * kRowBytes,
                          kRowBytes);
      }
      rows.push_back(r);
    }
    if (update_count) *update_count = v.update_count;
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return a.id < b.id; });
  return rows;
}

std::vector<float> Floats(const std::string& bytes) {
  std::vector<float> f(bytes.size() / 4);
  std::memcpy(f.data(), bytes.data(), f.size() * 4);
  return f;
}

HashedTableStats StatsOf(const Shard& s) {
  std::vector<HashedTableStats> all = s.HashedStats();
  EXPECT_EQ(all.size(), 1u);
  return all.empty() ? HashedTableStats() : all[0];
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(HashedShard, BucketIdsFollowTheLayout) {
  auto s = MakeShard(Sgd());
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(BucketBlock(*s, 0), 0u);
  EXPECT_EQ(s->block_ids().size(), kBuckets + 1);
  for (uint32_t b = 0; b < kBuckets; ++b) {
    auto r = s->ValueRegion(BucketBlock(*s, b));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->bytes, 0u);  // no arena memory
    EXPECT_EQ(RowsOf(*s, BucketBlock(*s, b)).size(), 0u);
  }
  HashedTableStats st = StatsOf(*s);
  EXPECT_EQ(st.name, "emb");
  EXPECT_EQ(st.rows, 0u);
  EXPECT_EQ(st.bytes_per_row, HashedRows::BytesPerRow(kRowBytes, 0));
  EXPECT_EQ(st.bytes_per_row, 16u + 24u + HashedRows::kIndexBytesPerRow);
}

TEST(HashedShard, PushThenGatherIsInitialMinusLrTimesGrad) {
  auto s = MakeShard(Sgd(0.5));
  ASSERT_NE(s, nullptr);
  const uint32_t bucket = 3, block = BucketBlock(*s, bucket);
  const std::vector<uint64_t> ids = IdsOf(bucket, 3);
  const std::vector<float> g = {1, 2,    3,    4,     -1.5, 0.25,
                                8, -0.5, 0.75, 1e-3f, 7,    -6};
  ASSERT_TRUE(Push(*s, block, ids, g).ok());
  std::vector<float> got = Gather(*s, block, ids);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_EQ(got[i], -0.5f * g[i]) << i;
  // An id never pushed reads as its initial row (zeros).
  const uint64_t fresh = IdsOf(bucket, 4)[3];
  EXPECT_EQ(Gather(*s, block, {fresh}), std::vector<float>(kR, 0.0f));
  EXPECT_EQ(s->UpdateCount(block).value(), 1u);
  HashedTableStats st = StatsOf(*s);
  EXPECT_EQ(st.rows, 3u);
  EXPECT_EQ(st.admitted, 3u);
  EXPECT_EQ(st.not_admitted, 0u);
  EXPECT_EQ(st.bytes, 3 * HashedRows::BytesPerRow(kRowBytes, 0));
  // Other buckets hold nothing.
  for (uint32_t b = 0; b < kBuckets; ++b) {
    EXPECT_EQ(RowsOf(*s, BucketBlock(*s, b)).size(), b == bucket ? 3u : 0u);
  }
  // A row of id 1's bucket read from another bucket is refused.
  std::vector<float> out(kR);
  const uint64_t other = IdsOf((bucket + 1) % kBuckets, 1)[0];
  EXPECT_EQ(s->GatherHashed(block, &other, 1, out.data()).code(),
            Status::Code::kInvalidArgument);
  // A second push goes on from the row's value.
  ASSERT_TRUE(Push(*s, block, {ids[1]}, {1, 1, 1, 1}).ok());
  got = Gather(*s, block, {ids[1]});
  for (size_t j = 0; j < kR; ++j) {
    EXPECT_EQ(got[j], -0.5f * g[kR + j] - 0.5f) << j;
  }
  EXPECT_EQ(s->UpdateCount(block).value(), 2u);
}

TEST(HashedShard, InitialRowIsTheConfiguredDraw) {
  ShardOptions o = Sgd(0.5);
  TableConfig c;
  c.init = protocol::RowInit::kUniform;
  c.init_scale = 0.1;
  c.seed = 42;
  o.tables["emb"] = c;
  auto s = MakeShard(o);
  ASSERT_NE(s, nullptr);
  const uint32_t block = BucketBlock(*s, 5);
  const std::vector<uint64_t> ids = IdsOf(5, 2);
  std::vector<float> before = Gather(*s, block, ids);
  EXPECT_EQ(Slice(before, 0), Initial(c, ids[0]));
  EXPECT_EQ(Slice(before, 1), Initial(c, ids[1]));
  EXPECT_NE(Slice(before, 0), std::vector<float>(kR, 0.0f));
  const std::vector<float> g = {1, -2, 0.5, 4};
  ASSERT_TRUE(Push(*s, block, {ids[0]}, g).ok());
  std::vector<float> after = Gather(*s, block, ids);
  for (size_t j = 0; j < kR; ++j) {
    float w = Initial(c, ids[0])[j];
    w -= 0.5f * g[j];
    EXPECT_EQ(after[j], w) << j;
  }
  EXPECT_EQ(Slice(after, 1), Initial(c, ids[1]));  // untouched
}

TEST(HashedShard, RepeatedIdsInOnePushAreSummed) {
  auto s = MakeShard(Sgd(0.5));
  ASSERT_NE(s, nullptr);
  const uint32_t block = BucketBlock(*s, 6);
  const std::vector<uint64_t> ids = IdsOf(6, 2);
  // a, b, a: a's row gets g0 + g2 in one update.
  ASSERT_TRUE(Push(*s, block, {ids[0], ids[1], ids[0]},
                   {1, 2, 3, 4, 10, 20, 30, 40, 0.5, -4, 0.25, 2})
                  .ok());
  EXPECT_EQ(Gather(*s, block, ids),
            (std::vector<float>{-0.75f, 1.0f, -1.625f, -3.0f, -5.0f, -10.0f,
                                -15.0f, -20.0f}));
  EXPECT_EQ(s->UpdateCount(block).value(), 1u);
  HashedTableStats st = StatsOf(*s);
  EXPECT_EQ(st.rows, 2u);
  EXPECT_EQ(st.admitted, 2u);
  // Descending ids (the sorting path) give the same as ascending ones.
  auto t = MakeShard(Sgd(0.5));
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(
      Push(*t, block, {ids[1], ids[0]}, {10, 20, 30, 40, 1.5, -2, 3.25, 6})
          .ok());
  EXPECT_EQ(Gather(*t, block, ids),
            (std::vector<float>{-0.75f, 1.0f, -1.625f, -3.0f, -5.0f, -10.0f,
                                -15.0f, -20.0f}));
}

TEST(HashedShard, IdOfAnotherBucketRefusesTheWholePush) {
  auto s = MakeShard(Sgd(0.5));
  ASSERT_NE(s, nullptr);
  const uint32_t block = BucketBlock(*s, 2);
  const uint64_t good = IdsOf(2, 1)[0];
  const uint64_t bad = IdsOf(4, 1)[0];
  AlignedBytes bytes(
      EncodeSparseRows({good, bad}, std::vector<float>(8, 1).data(), kR, 4));
  Status st = s->Apply(RowsRef(block, bytes), Soon());
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("id " + std::to_string(bad) + " is in bucket 4"),
            std::string::npos)
      << st.ToString();
  bool called = false;
  st = s->ApplyAsync(RowsRef(block, bytes),
                     [&](const Status&) { called = true; });
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE(s->WaitIdle(Soon()).ok());
  EXPECT_FALSE(called);
  // Nothing of it was applied.
  EXPECT_EQ(Gather(*s, block, {good}), std::vector<float>(kR, 0.0f));
  EXPECT_EQ(s->UpdateCount(block).value(), 0u);
  HashedTableStats stats = StatsOf(*s);
  EXPECT_EQ(stats.rows, 0u);
  EXPECT_EQ(stats.admitted, 0u);
  EXPECT_EQ(stats.not_admitted, 0u);
  // The bad id's own bucket took nothing either.
  EXPECT_EQ(RowsOf(*s, BucketBlock(*s, 4)).size(), 0u);
}

TEST(HashedShard, DenseGradientsAndDenseCallsAreRefused) {
  auto s = MakeShard(Sgd(0.5));
  ASSERT_NE(s, nullptr);
  const uint32_t block = BucketBlock(*s, 1);
  const BlockInfo& info = s->layout().blocks()[block];
  ASSERT_EQ(info.num_elements, 16 * kR);  // 64 / 4 rows a push
  alignas(8) float g[16 * kR] = {};
  for (size_t bytes : {size_t{0}, size_t{16 * kR * 4}}) {
    GradientRef gr{block, 0, 0, GradientFormat::kDense, g, bytes};
    Status st = s->Apply(gr, Soon());
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << bytes;
    EXPECT_NE(st.message().find("takes rows only"), std::string::npos)
        << st.ToString();
    bool called = false;
    EXPECT_EQ(s->ApplyAsync(gr, [&](const Status&) { called = true; }).code(),
              Status::Code::kInvalidArgument);
    EXPECT_FALSE(called);
  }
  EXPECT_EQ(s->UpdateCount(block).value(), 0u);
  EXPECT_EQ(s->ReadValues(block, g, 0).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s->RestoreBlock(block, g, nullptr, nullptr, 3).code(),
            Status::Code::kInvalidArgument);
  // The dense parameter next to it takes dense gradients as before.
  const uint32_t w = s->layout().FirstBlockOf(1);
  GradientRef dense{w, 0, 0, GradientFormat::kDense, g, 6 * 4};
  EXPECT_TRUE(s->Apply(dense, Soon()).ok());
  // and is no hashed bucket.
  uint64_t id = 1;
  EXPECT_EQ(s->GatherHashed(w, &id, 1, g).code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(
      s->RestoreHashed(w, 0, nullptr, nullptr, nullptr, nullptr, nullptr, 0)
          .code(),
      Status::Code::kInvalidArgument);
}

TEST(HashedShard, ApplyAsyncAppliesPushesOfABucketInOrder) {
  for (uint64_t inline_bytes : {uint64_t{0}, uint64_t{1} << 20}) {
    ShardOptions o = Sgd(0.5);
    o.inline_apply_bytes = inline_bytes;
    o.num_threads = 2;
    auto s = MakeShard(o);
    ASSERT_NE(s, nullptr);
    const uint32_t block = BucketBlock(*s, 4);
    const std::vector<uint64_t> ids = IdsOf(4, 2);
    std::vector<AlignedBytes> pushes;
    for (int k = 1; k <= 20; ++k) {
      std::vector<float> g(2 * kR, static_cast<float>(k));
      pushes.emplace_back(EncodeSparseRows(ids, g.data(), kR, 4));
    }
    std::atomic<int> ok{0};
    for (const AlignedBytes& b : pushes) {
      ASSERT_TRUE(s->ApplyAsync(RowsRef(block, b), [&](const Status& st) {
                     ok += st.ok();
                   }).ok());
    }
    ASSERT_TRUE(s->WaitIdle(Soon()).ok());
    EXPECT_EQ(ok.load(), 20);
    // 0 - 0.5 * (1 + 2 + ... + 20), exact in float.
    EXPECT_EQ(Gather(*s, block, ids), std::vector<float>(2 * kR, -105.0f))
        << inline_bytes;
    EXPECT_EQ(s->UpdateCount(block).value(), 20u);
  }
}

TEST(HashedShard, Float64Table) {
  auto l = Layout::Build({protocol::HashedSpec("e64", DType::kFloat64, {3}, 2)},
                         64, 1);
  ASSERT_TRUE(l.ok());
  ShardOptions o = Sgd(0.25);
  TableConfig c;
  c.init = protocol::RowInit::kUniform;
  c.init_scale = 1;
  c.seed = 3;
  o.tables["e64"] = c;
  auto s = Shard::Create(*l, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  uint64_t id = 1;
  while (protocol::BucketOfId(id, 2) != 1) ++id;
  const std::vector<double> g = {1.0 / 3, -2, 1e-9};
  AlignedBytes bytes(EncodeSparseRows({id}, g.data(), 3, 8));
  ASSERT_TRUE((*s)->Apply(RowsRef(1, bytes), Soon()).ok());
  double init[3], got[3];
  protocol::InitialRow(c, id, DType::kFloat64, 3, init);
  ASSERT_TRUE((*s)->GatherHashed(1, &id, 1, got).ok());
  for (int j = 0; j < 3; ++j) EXPECT_EQ(got[j], init[j] - 0.25 * g[j]) << j;
  EXPECT_EQ(StatsOf(**s).bytes_per_row, HashedRows::BytesPerRow(24, 0));
}

TEST(HashedShard, AdmissionAtExactlyAdmitAfter) {
  ShardOptions o = Sgd(0.5);
  TableConfig c;
  c.init = protocol::RowInit::kUniform;
  c.init_scale = 0.1;
  c.seed = 9;
  c.admit_after = 3;
  o.tables["emb"] = c;
  o.sketch_width = 4096;
  auto s = MakeShard(o);
  ASSERT_NE(s, nullptr);
  const uint32_t block = BucketBlock(*s, 0);
  const std::vector<uint64_t> ids = IdsOf(0, 2);
  const uint64_t x = ids[0], y = ids[1];
  const std::vector<float> g = {1, 2, -3, 0.5};
  for (int push = 1; push <= 2; ++push) {
    ASSERT_TRUE(Push(*s, block, {x}, g).ok());
    EXPECT_EQ(Gather(*s, block, {x}), Initial(c, x)) << "push " << push;
    HashedTableStats st = StatsOf(*s);
    EXPECT_EQ(st.rows, 0u) << push;
    EXPECT_EQ(st.admitted, 0u) << push;
    EXPECT_EQ(st.not_admitted, static_cast<uint64_t>(push));
  }
  // y is pushed twice along the way: never admitted.
  ASSERT_TRUE(Push(*s, block, {y}, g).ok());
  EXPECT_EQ(StatsOf(*s).not_admitted, 3u);
  // The third push of x creates the row from its initial value and applies
  // this push's gradient.
  ASSERT_TRUE(Push(*s, block, {x, y}, {1, 2, -3, 0.5, 7, 7, 7, 7}).ok());
  std::vector<float> want = Initial(c, x);
  for (size_t j = 0; j < kR; ++j) want[j] -= 0.5f * g[j];
  EXPECT_EQ(Gather(*s, block, {x}), want);
  EXPECT_EQ(Gather(*s, block, {y}), Initial(c, y));
  HashedTableStats st = StatsOf(*s);
  EXPECT_EQ(st.rows, 1u);
  EXPECT_EQ(st.admitted, 1u);
  EXPECT_EQ(st.not_admitted, 4u);
  EXPECT_EQ(st.bytes,
            HashedRows::BytesPerRow(kRowBytes, 0) + 4 * uint64_t{4096});
  // Every push counted as an update of the bucket.
  EXPECT_EQ(s->UpdateCount(block).value(), 4u);
  // An admitted row takes every later push.
  ASSERT_TRUE(Push(*s, block, {x}, g).ok());
  for (size_t j = 0; j < kR; ++j) want[j] -= 0.5f * g[j];
  EXPECT_EQ(Gather(*s, block, {x}), want);
  EXPECT_EQ(StatsOf(*s).admitted, 1u);
  EXPECT_EQ(StatsOf(*s).not_admitted, 4u);
}

TEST(HashedShard, AdaGradKeepsStatePerRow) {
  auto s = MakeShard(AdaGrad());
  ASSERT_NE(s, nullptr);
  const uint32_t block = BucketBlock(*s, 7);
  const std::vector<uint64_t> ids = IdsOf(7, 3);
  const std::vector<float> g1 = {1, -2, 0.5, 3};
  const std::vector<float> g2 = {-0.5, 4, 0.25, 1};
  const std::vector<float> h = {2, 2, -1, 0.125};
  ASSERT_TRUE(Push(*s, block, {ids[0]}, g1).ok());
  ASSERT_TRUE(Push(*s, block, {ids[0], ids[1]},
                   {g2[0], g2[1], g2[2], g2[3], h[0], h[1], h[2], h[3]})
                  .ok());
  // AdaGrad in float as the kernel computes it: s += g^2;
  // w -= lr * g / (sqrt(s) + eps), s from adagrad_initial.
  const float lr = 0.1f, eps = 1e-8f, s0 = 0.1f;
  std::vector<float> w0(kR, 0), a0(kR, s0), w1(kR, 0), a1(kR, s0);
  for (size_t j = 0; j < kR; ++j) {
    for (float gj : {g1[j], g2[j]}) {
      a0[j] = a0[j] + gj * gj;
      w0[j] -= lr * gj / (std::sqrt(a0[j]) + eps);
    }
    a1[j] = a1[j] + h[j] * h[j];
    w1[j] -= lr * h[j] / (std::sqrt(a1[j]) + eps);
  }
  std::vector<Row> rows = RowsOf(*s, block);
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_EQ(rows[0].id, ids[0]);
  ASSERT_EQ(rows[1].id, ids[1]);
  std::vector<float> v0 = Floats(rows[0].values),
                     st0 = Floats(rows[0].state[0]);
  std::vector<float> v1 = Floats(rows[1].values),
                     st1 = Floats(rows[1].state[0]);
  for (size_t j = 0; j < kR; ++j) {
    EXPECT_FLOAT_EQ(v0[j], w0[j]) << j;
    EXPECT_FLOAT_EQ(st0[j], a0[j]) << j;
    EXPECT_FLOAT_EQ(v1[j], w1[j]) << j;
    EXPECT_FLOAT_EQ(st1[j], a1[j]) << j;
  }
  EXPECT_EQ(Gather(*s, block, {ids[0]}), Floats(rows[0].values));
  // A row that was never pushed has no state.
  EXPECT_EQ(Gather(*s, block, {ids[2]}), std::vector<float>(kR, 0.0f));
  EXPECT_EQ(StatsOf(*s).bytes_per_row, HashedRows::BytesPerRow(kRowBytes, 1));
}

TEST(HashedShard, EvictsByTtl) {
  ShardOptions o = Sgd();
  TableConfig c;
  c.ttl_seconds = 2;
  o.tables["emb"] = c;
  auto s = MakeShard(o);
  ASSERT_NE(s, nullptr);
  // Bucket 1: t = 1000 (goes), 5000 and 4001 (stay); bucket 2: 3999 (goes),
  // 6000 (stays). now = 6000, ttl 2 s: rows updated before 4000 go.
  const std::vector<uint64_t> a = IdsOf(1, 3), b = IdsOf(2, 2);
  const std::vector<int64_t> ta = {1000, 5000, 4001}, tb = {3999, 6000};
  std::vector<float> va(3 * kR), vb(2 * kR);
  for (size_t i = 0; i < va.size(); ++i) va[i] = 1.0f + i;
  for (size_t i = 0; i < vb.size(); ++i) vb[i] = 100.0f + i;
  const uint32_t ba = BucketBlock(*s, 1), bb = BucketBlock(*s, 2);
  ASSERT_TRUE(s->RestoreHashed(ba, 3, a.data(), ta.data(), va.data(), nullptr,
                               nullptr, 11)
                  .ok());
  ASSERT_TRUE(s->RestoreHashed(bb, 2, b.data(), tb.data(), vb.data(), nullptr,
                               nullptr, 12)
                  .ok());
  EXPECT_EQ(s->UpdateCount(ba).value(), 11u);
  EXPECT_EQ(StatsOf(*s).rows, 5u);
  EXPECT_EQ(s->EvictHashed(6000), 2u);
  std::vector<Row> ra = RowsOf(*s, ba), rb = RowsOf(*s, bb);
  std::vector<uint64_t> left_a, left_b;
  for (const Row& r : ra) left_a.push_back(r.id);
  for (const Row& r : rb) left_b.push_back(r.id);
  EXPECT_EQ(left_a, (std::vector<uint64_t>{a[1], a[2]}));
  EXPECT_EQ(left_b, (std::vector<uint64_t>{b[1]}));
  // Survivors keep their values and times.
  ASSERT_EQ(ra.size(), 2u);
  EXPECT_EQ(ra[0].ms, 5000);
  EXPECT_EQ(ra[1].ms, 4001);
  EXPECT_EQ(Floats(ra[0].values), Slice(va, 1));
  EXPECT_EQ(Floats(ra[1].values), Slice(va, 2));
  // An evicted id reads as its initial row again.
  EXPECT_EQ(Gather(*s, ba, {a[0]}), std::vector<float>(kR, 0.0f));
  HashedTableStats st = StatsOf(*s);
  EXPECT_EQ(st.rows, 3u);
  EXPECT_EQ(st.evicted_ttl, 2u);
  EXPECT_EQ(st.evicted_budget, 0u);
  EXPECT_EQ(st.over_budget, 0u);
  // Nothing more to drop at the same time; later, one row at a time.
  EXPECT_EQ(s->EvictHashed(6000), 0u);
  EXPECT_EQ(s->EvictHashed(6002), 1u);  // 4001 < 4002
  EXPECT_EQ(s->EvictHashed(7000), 0u);  // 5000 == 7000 - 2000 stays
  EXPECT_EQ(s->EvictHashed(7001), 1u);
  EXPECT_EQ(s->EvictHashed(8001), 1u);
  EXPECT_EQ(StatsOf(*s).rows, 0u);
  EXPECT_EQ(StatsOf(*s).evicted_ttl, 5u);
  // A table without TTL or budget keeps every row.
  auto keep = MakeShard(Sgd());
  ASSERT_NE(keep, nullptr);
  ASSERT_TRUE(keep->RestoreHashed(ba, 3, a.data(), ta.data(), va.data(),
                                  nullptr, nullptr, 0)
                  .ok());
  EXPECT_EQ(keep->EvictHashed(int64_t{1} << 50), 0u);
  EXPECT_EQ(StatsOf(*keep).rows, 3u);
}

TEST(HashedShard, EvictsLeastRecentlyUpdatedOverBudget) {
  ShardOptions o = Sgd();
  TableConfig c;
  c.budget_bytes = 3 * HashedRows::BytesPerRow(kRowBytes, 0);
  o.tables["emb"] = c;
  auto s = MakeShard(o);
  ASSERT_NE(s, nullptr);
  // Ids 1..10 (spread over buckets), id i updated at 1000 + 100 * (i % 10):
  // id 10 is the oldest, 7, 8, 9 the newest.
  std::map<uint32_t, std::vector<uint64_t>> ids;
  std::map<uint32_t, std::vector<int64_t>> times;
  for (uint64_t id = 1; id <= 10; ++id) {
    const uint32_t b = protocol::BucketOfId(id, kBuckets);
    ids[b].push_back(id);
    times[b].push_back(1000 + 100 * static_cast<int64_t>(id % 10));
  }
  ASSERT_GT(ids.size(), 3u);
  for (const auto& [b, list] : ids) {
    std::vector<float> v(list.size() * kR, static_cast<float>(b));
    ASSERT_TRUE(s->RestoreHashed(BucketBlock(*s, b), list.size(), list.data(),
                                 times[b].data(), v.data(), nullptr, nullptr, 0)
                    .ok());
  }
  EXPECT_EQ(StatsOf(*s).rows, 10u);
  EXPECT_EQ(s->EvictHashed(2000), 7u);
  std::set<uint64_t> left;
  for (uint32_t b = 0; b < kBuckets; ++b) {
    for (const Row& r : RowsOf(*s, BucketBlock(*s, b))) left.insert(r.id);
  }
  EXPECT_EQ(left, (std::set<uint64_t>{7, 8, 9}));
  HashedTableStats st = StatsOf(*s);
  EXPECT_EQ(st.rows, 3u);
  EXPECT_EQ(st.evicted_budget, 7u);
  EXPECT_EQ(st.evicted_ttl, 0u);
  EXPECT_EQ(st.over_budget, 1u);
  EXPECT_EQ(st.bytes, c.budget_bytes);
  // At the budget: nothing more goes.
  EXPECT_EQ(s->EvictHashed(3000), 0u);
  EXPECT_EQ(StatsOf(*s).over_budget, 1u);
  EXPECT_EQ(StatsOf(*s).rows, 3u);
}

TEST(HashedShard, BudgetCutAmongEqualTimesDropsExactlyTheExcess) {
  ShardOptions o = Sgd();
  TableConfig c;
  c.budget_bytes = 3 * HashedRows::BytesPerRow(kRowBytes, 0) + 10;
  o.tables["emb"] = c;
  auto s = MakeShard(o);
  ASSERT_NE(s, nullptr);
  // Three rows at t=100, two at t=200, in two buckets: two of the t=100
  // rows go.
  const std::vector<uint64_t> a = IdsOf(0, 3), b = IdsOf(5, 2);
  const std::vector<int64_t> ta = {100, 200, 100}, tb = {100, 200};
  std::vector<float> v(3 * kR, 1.0f);
  ASSERT_TRUE(s->RestoreHashed(BucketBlock(*s, 0), 3, a.data(), ta.data(),
                               v.data(), nullptr, nullptr, 0)
                  .ok());
  ASSERT_TRUE(s->RestoreHashed(BucketBlock(*s, 5), 2, b.data(), tb.data(),
                               v.data(), nullptr, nullptr, 0)
                  .ok());
  EXPECT_EQ(s->EvictHashed(1000), 2u);
  int at100 = 0, at200 = 0;
  for (uint32_t k : {0u, 5u}) {
    for (const Row& r : RowsOf(*s, BucketBlock(*s, k))) {
      at100 += r.ms == 100;
      at200 += r.ms == 200;
    }
  }
  EXPECT_EQ(at100, 1);
  EXPECT_EQ(at200, 2);
  EXPECT_EQ(StatsOf(*s).evicted_budget, 2u);
}

TEST(HashedShard, RestoreHashedRefusesBadRowsAndKeepsTheBucket) {
  auto s = MakeShard(AdaGrad());
  ASSERT_NE(s, nullptr);
  const uint32_t block = BucketBlock(*s, 4);
  const std::vector<uint64_t> ids = IdsOf(4, 2);
  const std::vector<int64_t> ms = {10, 20};
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> st = {9, 9, 9, 9, 8, 8, 8, 8};
  ASSERT_TRUE(s->RestoreHashed(block, 2, ids.data(), ms.data(), v.data(),
                               st.data(), nullptr, 5)
                  .ok());
  const std::vector<Row> before = RowsOf(*s, block);
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(Floats(before[0].state[0]), Slice(st, 0));

  const std::vector<uint64_t> repeated = {ids[1], ids[1]};
  Status r = s->RestoreHashed(block, 2, repeated.data(), ms.data(), v.data(),
                              st.data(), nullptr, 6);
  EXPECT_EQ(r.code(), Status::Code::kInvalidArgument) << r.ToString();
  const std::vector<uint64_t> foreign = {ids[0], IdsOf(3, 1)[0]};
  r = s->RestoreHashed(block, 2, foreign.data(), ms.data(), v.data(), st.data(),
                       nullptr, 6);
  EXPECT_EQ(r.code(), Status::Code::kInvalidArgument) << r.ToString();
  EXPECT_NE(r.message().find(std::to_string(foreign[1])), std::string::npos);
  // AdaGrad rows need their state.
  r = s->RestoreHashed(block, 2, ids.data(), ms.data(), v.data(), nullptr,
                       nullptr, 6);
  EXPECT_EQ(r.code(), Status::Code::kInvalidArgument) << r.ToString();
  // The bucket is as it was.
  uint64_t count = 0;
  EXPECT_EQ(RowsOf(*s, block, &count), before);
  EXPECT_EQ(count, 5u);
  // Zero rows clear it.
  ASSERT_TRUE(
      s->RestoreHashed(block, 0, nullptr, nullptr, nullptr, nullptr, nullptr, 7)
          .ok());
  EXPECT_EQ(RowsOf(*s, block, &count).size(), 0u);
  EXPECT_EQ(count, 7u);
}

TEST(HashedShard, CreateRefusesSyncModeAndBadTableOptions) {
  ShardOptions o = Sgd();
  o.mode = ApplyMode::kSync;
  auto s = Shard::Create(MakeLayout(1), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kUnimplemented)
      << s.status().ToString();
  EXPECT_NE(s.status().message().find("emb"), std::string::npos);
  // A dense-only layout in sync mode is fine.
  auto dense = Layout::Build({{"w", DType::kFloat32, {6}}}, 64, 1);
  ASSERT_TRUE(dense.ok());
  EXPECT_TRUE(Shard::Create(*dense, o).ok());

  o = Sgd();
  o.tables["w"] = TableConfig();  // not a hashed table
  EXPECT_EQ(Shard::Create(MakeLayout(1), o).status().code(),
            Status::Code::kInvalidArgument);
  o = Sgd();
  o.tables["nope"] = TableConfig();
  EXPECT_FALSE(Shard::Create(MakeLayout(1), o).ok());
  o = Sgd();
  TableConfig bad;
  bad.admit_after = 0;
  o.tables["emb"] = bad;
  auto r = Shard::Create(MakeLayout(1), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("admit_after"), std::string::npos)
      << r.status().ToString();
}

// InitBlock of a bucket sets its rows from ids and values (a job started
// from a model file): each admitted now with the rule's initial state, the
// update count 0; empty bytes clear it. Bad bytes leave it as it was.
TEST(HashedShard, InitBlockSetsABucketsRowsFromIdsAndValues) {
  auto s = MakeShard(AdaGrad());
  ASSERT_NE(s, nullptr);
  const uint32_t block = BucketBlock(*s, 2);
  const std::vector<uint64_t> ids = IdsOf(2, 3);
  ASSERT_TRUE(Push(*s, block, ids, std::vector<float>(12, 2.0f)).ok());
  ASSERT_EQ(RowsOf(*s, block).size(), 3u);
  const std::vector<uint64_t> start = IdsOf(2, 2, ids.back() + 1);
  std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8};
  std::string bytes = protocol::EncodeIdRows(start.data(), values.data(), 2,
                                             kR * sizeof(float));
  const uint64_t admitted = StatsOf(*s).admitted;

  // Refused, the bucket unchanged: a length that is not whole rows, an id
  // of another bucket, an id twice.
  Status st = s->InitBlock(block, bytes.data(), bytes.size() - 1);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  const std::vector<uint64_t> other = {start[0], IdsOf(3, 1)[0]};
  std::string bad = protocol::EncodeIdRows(other.data(), values.data(), 2,
                                           kR * sizeof(float));
  st = s->InitBlock(block, bad.data(), bad.size());
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("is in bucket 3, not 2"), std::string::npos)
      << st.ToString();
  const std::vector<uint64_t> twice = {start[0], start[0]};
  bad = protocol::EncodeIdRows(twice.data(), values.data(), 2,
                               kR * sizeof(float));
  st = s->InitBlock(block, bad.data(), bad.size());
  EXPECT_NE(st.message().find("is given twice"), std::string::npos)
      << st.ToString();
  EXPECT_EQ(RowsOf(*s, block).size(), 3u);
  EXPECT_EQ(s->UpdateCount(block).value(), 1u);

  ASSERT_TRUE(s->InitBlock(block, bytes.data(), bytes.size()).ok());
  EXPECT_EQ(s->UpdateCount(block).value(), 0u);
  EXPECT_EQ(Gather(*s, block, start), values);
  EXPECT_EQ(Gather(*s, block, ids), std::vector<float>(12, 0.0f))
      << "the rows before are gone: initial rows (zeros)";
  EXPECT_EQ(StatsOf(*s).rows, 2u);
  EXPECT_EQ(StatsOf(*s).admitted, admitted + 2);
  // The rows take the rule's initial state: a push of 1 with AdaGrad
  // (initial s 0.1, lr 0.1) moves each element by lr / sqrt(0.1 + 1).
  ASSERT_TRUE(Push(*s, block, {start[0]}, std::vector<float>(kR, 1.0f)).ok());
  std::vector<float> got = Gather(*s, block, {start[0]});
  for (size_t j = 0; j < kR; ++j)
    EXPECT_FLOAT_EQ(got[j], values[j] - 0.1f / std::sqrt(1.1f)) << j;

  ASSERT_TRUE(s->InitBlock(block, nullptr, 0).ok());
  EXPECT_EQ(RowsOf(*s, block).size(), 0u);
  EXPECT_EQ(StatsOf(*s).rows, 0u);
}

// Pushes two rounds of rows to every owned bucket of `s`: `per_bucket` ids
// each (ids from `start`), gradients derived from the id.
void Train(Shard& s, size_t per_bucket, uint64_t start = 1) {
  for (int round = 0; round < 2; ++round) {
    for (uint32_t b = 0; b < kBuckets; ++b) {
      const uint32_t block = BucketBlock(s, b);
      if (!s.Owns(block)) continue;
      std::vector<uint64_t> ids = IdsOf(b, per_bucket + b % 2, start);
      std::vector<float> g;
      for (uint64_t id : ids) {
        for (size_t j = 0; j < kR; ++j)
          g.push_back(std::sin(0.3f * id + j + round));
      }
      ASSERT_TRUE(Push(s, block, ids, g).ok());
    }
  }
  const uint32_t w = s.layout().FirstBlockOf(1);
  if (s.Owns(w)) {
    alignas(8) float g[6] = {1, 2, 3, 4, 5, 6};
    ASSERT_TRUE(
        s.Apply({w, 0, 0, GradientFormat::kDense, g, sizeof(g)}, Soon()).ok());
  }
}

TEST(HashedShard, CheckpointRoundTripRestoresEveryBucket) {
  TempDir dir;
  auto a = MakeShard(AdaGrad());
  ASSERT_NE(a, nullptr);
  Train(*a, 3);
  ASSERT_EQ(StatsOf(*a).rows, 8 * 3 + 4u);
  auto info = WriteCheckpoint(*a, dir.path(), 1);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  auto b = MakeShard(AdaGrad());
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(LoadCheckpoint(info->path, b.get()).ok());
  for (uint32_t k = 0; k < kBuckets; ++k) {
    const uint32_t block = BucketBlock(*a, k);
    uint64_t ca = 0, cb = 0;
    std::vector<Row> ra = RowsOf(*a, block, &ca), rb = RowsOf(*b, block, &cb);
    EXPECT_EQ(ra.size(), 3u + k % 2) << k;
    EXPECT_EQ(ra, rb) << "bucket " << k;
    EXPECT_EQ(ca, 2u);
    EXPECT_EQ(ca, cb);
    for (const Row& r : ra) EXPECT_EQ(r.state[0].size(), kRowBytes);
  }
  const uint32_t w = a->layout().FirstBlockOf(1);
  EXPECT_EQ(testing::ValuesOf(*a, w), testing::ValuesOf(*b, w));
  EXPECT_EQ(StatsOf(*b).rows, StatsOf(*a).rows);
  // Training goes on identically (the per-row state came back).
  Train(*a, 3, 2);
  Train(*b, 3, 2);
  for (uint32_t k = 0; k < kBuckets; ++k) {
    EXPECT_EQ(RowsOf(*a, BucketBlock(*a, k)).size(),
              RowsOf(*b, BucketBlock(*b, k)).size());
    std::vector<Row> ra = RowsOf(*a, BucketBlock(*a, k));
    std::vector<Row> rb = RowsOf(*b, BucketBlock(*b, k));
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t i = 0; i < ra.size(); ++i) {
      EXPECT_EQ(ra[i].values, rb[i].values) << k << " " << i;
      EXPECT_EQ(ra[i].state[0], rb[i].state[0]) << k << " " << i;
    }
  }
}

TEST(HashedShard, CheckpointDamageIsCorruption) {
  TempDir dir;
  auto a = MakeShard(AdaGrad());
  ASSERT_NE(a, nullptr);
  const uint32_t b3 = BucketBlock(*a, 3), b6 = BucketBlock(*a, 6);
  // Large ids: their bytes appear nowhere else in the file.
  const uint64_t start = 0x0123456789abcdefull;
  const std::vector<uint64_t> ids3 = IdsOf(3, 2, start);
  ASSERT_TRUE(Push(*a, b3, ids3, std::vector<float>(8, 0.5f)).ok());
  ASSERT_TRUE(
      Push(*a, b6, IdsOf(6, 1, start), std::vector<float>(4, -1.0f)).ok());
  auto info = WriteCheckpoint(*a, dir.path(), 1);
  ASSERT_TRUE(info.ok());
  const std::string good = ReadAll(info->path);
  auto fresh = MakeShard(AdaGrad());
  ASSERT_NE(fresh, nullptr);
  const std::string bad_path = dir.path() + "/bad.ckpt";
  // The bytes of one id of bucket 3 as they sit in its record.
  const uint64_t id = ids3[1];
  const std::string id_bytes(reinterpret_cast<const char*>(&id), 8);
  const size_t at = good.find(id_bytes);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(good.find(id_bytes, at + 1), std::string::npos);
  std::string bad = good;
  bad[at] ^= 0x01;
  WriteAll(bad_path, bad);
  Status s = LoadCheckpoint(bad_path, fresh.get());
  EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find("block " + std::to_string(b3) + " ("),
            std::string::npos)
      << s.ToString();
  EXPECT_EQ(StatsOf(*fresh).rows, 0u);  // nothing loaded
  // Every flipped byte and every truncation of the file.
  for (size_t i = 0; i < good.size(); ++i) {
    bad = good;
    bad[i] = static_cast<char>(bad[i] ^ (1 << (i % 8)));
    WriteAll(bad_path, bad);
    Status st = VerifyCheckpoint(bad_path, *fresh);
    ASSERT_EQ(st.code(), Status::Code::kCorruption)
        << "flip at " << i << " of " << good.size() << ": " << st.ToString();
  }
  for (size_t n = 0; n < good.size(); ++n) {
    WriteAll(bad_path, good.substr(0, n));
    ASSERT_EQ(VerifyCheckpoint(bad_path, *fresh).code(),
              Status::Code::kCorruption)
        << "truncated to " << n;
  }
  WriteAll(bad_path, good);
  ASSERT_TRUE(LoadCheckpoint(bad_path, fresh.get()).ok());
  EXPECT_EQ(RowsOf(*fresh, b3), RowsOf(*a, b3));
  EXPECT_EQ(RowsOf(*fresh, b6), RowsOf(*a, b6));
}

// A record whose CRC is right but whose ids do not fit the bucket (a
// writer's bug, not a flipped bit) is refused by the verifying pass, so
// that nothing of the file is loaded.
TEST(HashedShard, CheckpointWithIdsOutsideTheirBucketIsRefused) {
  TempDir dir;
  auto a = MakeShard(AdaGrad());
  ASSERT_NE(a, nullptr);
  const uint32_t b3 = BucketBlock(*a, 3);
  const uint64_t start = 0x0123456789abcdefull;
  const std::vector<uint64_t> ids3 = IdsOf(3, 2, start);
  ASSERT_TRUE(Push(*a, b3, ids3, std::vector<float>(8, 0.5f)).ok());
  auto info = WriteCheckpoint(*a, dir.path(), 1);
  ASSERT_TRUE(info.ok());
  const std::string good = ReadAll(info->path);
  // Bucket 3's record: a 32-byte header, ids[2], times[2], the tombstone
  // count (0), values[2 rows], AdaGrad state[2 rows], then its CRC32C.
  std::vector<uint64_t> in_file(2);
  const size_t ids_at = good.find(std::string(
      reinterpret_cast<const char*>(&ids3[0]), 8));  // ascending: a push
  ASSERT_NE(ids_at, std::string::npos);
  std::memcpy(in_file.data(), good.data() + ids_at, 16);
  ASSERT_EQ(std::set<uint64_t>(in_file.begin(), in_file.end()),
            std::set<uint64_t>(ids3.begin(), ids3.end()));
  const size_t record = ids_at - 32;
  const size_t len = 32 + 2 * 16 + 8 + 2 * kRowBytes * 2;
  ASSERT_EQ(good.substr(record, 4),
            std::string(reinterpret_cast<const char*>(&b3), 4));
  auto resealed = [&](uint64_t second_id) {
    std::string bad = good;
    std::memcpy(&bad[ids_at + 8], &second_id, 8);
    const uint32_t crc = crc32c::Value(bad.data() + record, len);
    std::memcpy(&bad[record + len], &crc, 4);
    return bad;
  };
  // The file as written re-seals to itself (the offsets are right).
  ASSERT_EQ(resealed(in_file[1]), good);
  const std::string bad_path =
      dir.path() + "/shard-0-00000000000000000002.ckpt";
  for (uint64_t second : {in_file[0], IdsOf(5, 1, start)[0]}) {
    WriteAll(bad_path, resealed(second));
    auto b = MakeShard(AdaGrad());
    ASSERT_NE(b, nullptr);
    // b holds a row of its own in bucket 1, which a refused load keeps
    // (bucket 1's record, empty, comes before bucket 3's).
    const uint32_t b1 = BucketBlock(*b, 1);
    ASSERT_TRUE(Push(*b, b1, IdsOf(1, 1), {1, 1, 1, 1}).ok());
    const std::vector<Row> mine = RowsOf(*b, b1);
    ASSERT_EQ(mine.size(), 1u);
    Status v = VerifyCheckpoint(bad_path, *b);
    EXPECT_EQ(v.code(), Status::Code::kCorruption)
        << second << ": " << v.ToString();
    EXPECT_NE(v.message().find(second == in_file[0] ? "is repeated"
                                                    : "is not of bucket 3"),
              std::string::npos)
        << v.ToString();
    Status l = LoadCheckpoint(bad_path, b.get());
    EXPECT_FALSE(l.ok()) << second;
    EXPECT_EQ(RowsOf(*b, b1), mine) << second << ": " << l.ToString();
    EXPECT_EQ(RowsOf(*b, b3).size(), 0u) << second;
    // Export and re-sharding read it as damaged too.
    auto model = ReadNewestCheckpoints({dir.path()});
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    EXPECT_EQ(model->files[0], info->path) << "the damaged file was used";
  }
}

// Two pservers trained and checkpointed into `dir`; returns the shards.
std::vector<std::unique_ptr<Shard>> TrainTwo(const std::string& dir) {
  std::vector<std::unique_ptr<Shard>> shards;
  for (uint32_t i = 0; i < 2; ++i) {
    shards.push_back(MakeShard(AdaGrad(), 2, i));
    EXPECT_NE(shards.back(), nullptr);
    if (!shards.back()) return {};
    Train(*shards.back(), 3);
    EXPECT_TRUE(WriteCheckpoint(*shards.back(), dir, 1).ok());
  }
  return shards;
}

// The shard of `shards` owning bucket b.
const Shard& Owner(const std::vector<std::unique_ptr<Shard>>& shards,
                   uint32_t b) {
  for (const auto& s : shards) {
    if (s->Owns(BucketBlock(*s, b))) return *s;
  }
  ADD_FAILURE() << "no owner of bucket " << b;
  return *shards[0];
}

TEST(HashedShard, CheckpointedModelGathersRowsByAscendingId) {
  TempDir dir;
  auto shards = TrainTwo(dir.path());
  ASSERT_EQ(shards.size(), 2u);
  // Each pserver owns some buckets.
  ASSERT_GT(StatsOf(*shards[0]).rows, 0u);
  ASSERT_GT(StatsOf(*shards[1]).rows, 0u);
  auto model = ReadNewestCheckpoints({dir.path()});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->layout.num_pservers(), 2u);
  const CheckpointedParam& p = model->params[0];
  EXPECT_EQ(p.rule, RuleKind::kAdaGrad);
  // Every row of every bucket, by ascending id.
  std::map<uint64_t, Row> want;
  for (uint32_t b = 0; b < kBuckets; ++b) {
    for (const Row& r : RowsOf(Owner(shards, b), b)) want[r.id] = r;
  }
  ASSERT_EQ(want.size(), 28u);
  ASSERT_EQ(p.ids.size(), want.size());
  ASSERT_EQ(p.updated_ms.size(), want.size());
  ASSERT_EQ(p.values.size(), want.size() * kRowBytes);
  ASSERT_EQ(p.state[0].size(), want.size() * kRowBytes);
  EXPECT_TRUE(p.state[1].empty());
  size_t i = 0;
  for (const auto& [id, r] : want) {
    EXPECT_EQ(p.ids[i], id) << i;
    EXPECT_EQ(p.updated_ms[i], r.ms) << i;
    EXPECT_EQ(p.values.substr(i * kRowBytes, kRowBytes), r.values) << i;
    EXPECT_EQ(p.state[0].substr(i * kRowBytes, kRowBytes), r.state[0]) << i;
    ++i;
  }
  for (uint32_t b = 0; b < kBuckets; ++b)
    EXPECT_EQ(model->update_counts[b], 2u) << b;

  // Exported: "emb.ids" U64 ascending and "emb.values" [rows, 4].
  const std::string path = dir.path() + "/model.safetensors";
  const std::string state_path = dir.path() + "/state.safetensors";
  ASSERT_TRUE(WriteCheckpointedModel(*model, path, state_path, "test").ok());
  auto f = safetensors::SafetensorsFile::Read(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->Find("emb"), nullptr);
  const safetensors::TensorInfo* ids = f->Find("emb.ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->dtype, "U64");
  EXPECT_EQ(ids->shape, (std::vector<uint64_t>{want.size()}));
  std::string_view id_bytes = f->Data(*ids);
  ASSERT_EQ(id_bytes.size(), want.size() * 8);
  std::vector<uint64_t> file_ids(want.size());
  std::memcpy(file_ids.data(), id_bytes.data(), id_bytes.size());
  EXPECT_TRUE(std::is_sorted(file_ids.begin(), file_ids.end()));
  EXPECT_EQ(std::adjacent_find(file_ids.begin(), file_ids.end()),
            file_ids.end());
  EXPECT_EQ(file_ids, p.ids);
  const safetensors::TensorInfo* values = f->Find("emb.values");
  ASSERT_NE(values, nullptr);
  EXPECT_EQ(values->dtype, "F32");
  EXPECT_EQ(values->shape, (std::vector<uint64_t>{want.size(), kR}));
  EXPECT_EQ(std::string(f->Data(*values)), p.values);
  // Row i of the file is id i's row as the pserver gathers it.
  for (size_t k = 0; k < file_ids.size(); ++k) {
    const uint32_t b = protocol::BucketOfId(file_ids[k], kBuckets);
    std::vector<float> row = Gather(Owner(shards, b), b, {file_ids[k]});
    EXPECT_EQ(std::memcmp(f->Data(*values).data() + k * kRowBytes, row.data(),
                          kRowBytes),
              0)
        << k;
  }
  const safetensors::TensorInfo* w = f->Find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<uint64_t>{6}));
  // The optimizer state of the rows, in the same order.
  auto sf = safetensors::SafetensorsFile::Read(state_path);
  ASSERT_TRUE(sf.ok()) << sf.status().ToString();
  const std::vector<std::string> slots =
      protocol::StateTensorSuffixes(RuleKind::kAdaGrad);
  ASSERT_EQ(slots.size(), 1u);
  const safetensors::TensorInfo* acc = sf->Find("emb.values/" + slots[0]);
  ASSERT_NE(acc, nullptr);
  EXPECT_EQ(acc->shape, (std::vector<uint64_t>{want.size(), kR}));
  EXPECT_EQ(std::string(sf->Data(*acc)), p.state[0]);
}

void ExpectSameModel(const CheckpointedModel& a, const CheckpointedModel& b) {
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    const CheckpointedParam& x = a.params[i];
    const CheckpointedParam& y = b.params[i];
    EXPECT_EQ(x.rule, y.rule) << i;
    EXPECT_EQ(x.ids, y.ids) << i;
    EXPECT_EQ(x.updated_ms, y.updated_ms) << i;
    EXPECT_TRUE(x.values == y.values) << i;
    EXPECT_TRUE(x.state[0] == y.state[0]) << i;
    EXPECT_TRUE(x.state[1] == y.state[1]) << i;
  }
  EXPECT_EQ(a.update_counts, b.update_counts);
}

TEST(HashedShard, EmptyTableExportsAndReshards) {
  TempDir dir;
  auto a = MakeShard(AdaGrad());
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(WriteCheckpoint(*a, dir.path(), 1).ok());
  auto model = ReadNewestCheckpoints({dir.path()});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_TRUE(model->params[0].ids.empty());
  EXPECT_TRUE(model->params[0].values.empty());
  const std::string path = dir.path() + "/model.safetensors";
  const std::string state_path = dir.path() + "/state.safetensors";
  Status w = WriteCheckpointedModel(*model, path, state_path, "test");
  ASSERT_TRUE(w.ok()) << w.ToString();
  auto f = safetensors::SafetensorsFile::Read(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const safetensors::TensorInfo* ids = f->Find("emb.ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->shape, (std::vector<uint64_t>{0}));
  const safetensors::TensorInfo* values = f->Find("emb.values");
  ASSERT_NE(values, nullptr);
  EXPECT_EQ(values->shape, (std::vector<uint64_t>{0, kR}));
  auto sf = safetensors::SafetensorsFile::Read(state_path);
  ASSERT_TRUE(sf.ok()) << sf.status().ToString();
  TempDir d0, d1;
  auto written =
      WriteReshardedCheckpoints(*model, 2, AdaGrad(), {d0.path(), d1.path()});
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  auto model2 = ReadNewestCheckpoints({d0.path(), d1.path()});
  ASSERT_TRUE(model2.ok()) << model2.status().ToString();
  ExpectSameModel(*model, *model2);
}

TEST(HashedShard, ReshardKeepsEveryRowBitForBit) {
  TempDir dir2;
  auto shards = TrainTwo(dir2.path());
  ASSERT_EQ(shards.size(), 2u);
  auto model2 = ReadNewestCheckpoints({dir2.path()});
  ASSERT_TRUE(model2.ok()) << model2.status().ToString();
  ASSERT_EQ(model2->params[0].ids.size(), 28u);

  ShardOptions rules = AdaGrad();
  TempDir d0, d1, d2;
  auto written = WriteReshardedCheckpoints(*model2, 3, rules,
                                           {d0.path(), d1.path(), d2.path()});
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  ASSERT_EQ(written->size(), 3u);
  auto model3 = ReadNewestCheckpoints({d0.path(), d1.path(), d2.path()});
  ASSERT_TRUE(model3.ok()) << model3.status().ToString();
  EXPECT_EQ(model3->layout.num_pservers(), 3u);
  ExpectSameModel(*model2, *model3);

  TempDir one;
  written = WriteReshardedCheckpoints(*model3, 1, rules, {one.path()});
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  auto model1 = ReadNewestCheckpoints({one.path()});
  ASSERT_TRUE(model1.ok()) << model1.status().ToString();
  EXPECT_EQ(model1->layout.num_pservers(), 1u);
  ExpectSameModel(*model2, *model1);

  // A one-pserver shard loads it and reads every row the two had.
  auto s = MakeShard(AdaGrad(), 1, 0);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(LoadCheckpoint((*written)[0].path, s.get()).ok());
  for (uint32_t b = 0; b < kBuckets; ++b) {
    uint64_t count = 0;
    std::vector<Row> now = RowsOf(*s, b, &count);
    EXPECT_EQ(now, RowsOf(Owner(shards, b), b)) << "bucket " << b;
    EXPECT_EQ(count, 2u);
  }
  // The rule must be the one whose state the model holds.
  TempDir other;
  EXPECT_EQ(WriteReshardedCheckpoints(*model2, 1, Sgd(), {other.path()})
                .status()
                .code(),
            Status::Code::kFailedPrecondition);
}

}  // namespace
}  // namespace fabps::pserver
