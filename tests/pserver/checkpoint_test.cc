// Checkpoints: round trip, rotation, fallback, and detection of every
// flipped byte and every truncation.
#include "pserver/checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <random>

#include "pserver/file_io.h"
#include "tests/pserver/test_util.h"

namespace fabps::pserver {
namespace {

using testing::TempDir;
using testing::ValuesOf;

Deadline Soon() { return Deadline::InMs(10000); }

std::vector<ParamSpec> SmallParams() {
  return {{"a", DType::kFloat32, {40}}, {"b", DType::kFloat64, {3, 5}}};
}

std::unique_ptr<Shard> MakeShard(
    uint32_t n = 1, uint32_t index = 0, RuleKind kind = RuleKind::kAdam,
    std::vector<ParamSpec> params = SmallParams()) {
  auto layout = Layout::Build(params, 16, n);
  EXPECT_TRUE(layout.ok());
  ShardOptions o;
  o.shard_index = index;
  o.default_rule.kind = kind;
  o.default_rule.learning_rate = 0.1;
  auto s = Shard::Create(std::move(layout).value(), o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

// Applies `steps` dense gradients with values derived from (block, step).
void Train(Shard* shard, int steps, int salt = 0) {
  for (int s = 0; s < steps; ++s) {
    for (uint32_t id : shard->block_ids()) {
      const BlockInfo& info = shard->layout().blocks()[id];
      DType dt = shard->layout().params()[info.param].dtype;
      std::vector<double> g(info.num_elements);
      for (size_t i = 0; i < g.size(); ++i)
        g[i] = std::sin(1.0 + id + s * 0.37 + i + salt);
      std::vector<float> gf(g.begin(), g.end());
      GradientRef gr;
      gr.block = id;
      gr.data = dt == DType::kFloat32 ? static_cast<const void*>(gf.data())
                                      : g.data();
      gr.bytes = info.num_elements * DTypeSize(dt);
      ASSERT_TRUE(shard->Apply(gr, Soon()).ok());
    }
  }
}

// Values, state and counts of every block, as bytes.
std::string Fingerprint(const Shard& shard) {
  std::string out;
  for (uint32_t id : shard.block_ids()) {
    EXPECT_TRUE(
        shard
            .ReadBlockLocked(
                id,
                [&](const BlockView& v) {
                  out.append(static_cast<const char*>(v.values), v.value_bytes);
                  for (int k = 0; k < StateSlots(v.rule); ++k) {
                    out.append(static_cast<const char*>(v.state[k]),
                               v.state_bytes);
                  }
                  out.append(reinterpret_cast<const char*>(&v.update_count), 8);
                })
            .ok());
  }
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(Checkpoint, RoundTripRestoresValuesStateAndCounts) {
  TempDir dir;
  auto a = MakeShard(2, 1);
  ASSERT_NE(a, nullptr);
  Train(a.get(), 5);
  auto info = WriteCheckpoint(*a, dir.path(), 7);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->sequence, 7u);
  EXPECT_NE(info->path.find("shard-1-00000000000000000007.ckpt"),
            std::string::npos);
  EXPECT_EQ(info->bytes, ReadAll(info->path).size());

  auto b = MakeShard(2, 1);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(LoadCheckpoint(info->path, b.get()).ok());
  EXPECT_EQ(Fingerprint(*a), Fingerprint(*b));
  // Training resumes identically (Adam's bias correction uses the count).
  Train(a.get(), 3, 1);
  Train(b.get(), 3, 1);
  EXPECT_EQ(Fingerprint(*a), Fingerprint(*b));
}

// Records of 1 MiB and more are written on a helper thread while the next
// block is copied: mixed large and small blocks still round-trip.
TEST(Checkpoint, LargeRecordsRoundTrip) {
  TempDir dir;
  std::vector<ParamSpec> params = {{"big", DType::kFloat32, {900000}},
                                   {"small", DType::kFloat64, {7}},
                                   {"big2", DType::kFloat64, {300000}}};
  auto make = [&] {
    auto layout = Layout::Build(params, 300000, 1);
    EXPECT_TRUE(layout.ok());
    ShardOptions o;
    o.default_rule.kind = RuleKind::kMomentum;
    return std::move(Shard::Create(std::move(layout).value(), o)).value();
  };
  auto a = make();
  Train(a.get(), 2);
  auto info = WriteCheckpoint(*a, dir.path(), 1);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  auto b = make();
  ASSERT_TRUE(LoadCheckpoint(info->path, b.get()).ok());
  EXPECT_EQ(Fingerprint(*a), Fingerprint(*b));
}

TEST(Checkpoint, EveryFlippedByteIsDetected) {
  TempDir dir;
  auto shard = MakeShard();
  ASSERT_NE(shard, nullptr);
  Train(shard.get(), 2);
  auto info = WriteCheckpoint(*shard, dir.path(), 1);
  ASSERT_TRUE(info.ok());
  const std::string good = ReadAll(info->path);
  ASSERT_GT(good.size(), 500u);
  const std::string bad_path = dir.path() + "/bad.ckpt";
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ (1 << (i % 8)));
    WriteAll(bad_path, bad);
    Status s = VerifyCheckpoint(bad_path, *shard);
    ASSERT_FALSE(s.ok()) << "flip at byte " << i << " of " << good.size();
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << i << ": " << s.ToString();
    EXPECT_NE(s.message().find(bad_path), std::string::npos) << s.ToString();
  }
  WriteAll(bad_path, good);
  EXPECT_TRUE(VerifyCheckpoint(bad_path, *shard).ok());
}

TEST(Checkpoint, EveryTruncationAndTrailingGarbageIsDetected) {
  TempDir dir;
  auto shard = MakeShard();
  ASSERT_NE(shard, nullptr);
  Train(shard.get(), 1);
  auto info = WriteCheckpoint(*shard, dir.path(), 1);
  ASSERT_TRUE(info.ok());
  const std::string good = ReadAll(info->path);
  const std::string bad_path = dir.path() + "/short.ckpt";
  for (size_t n = 0; n < good.size(); ++n) {
    WriteAll(bad_path, good.substr(0, n));
    Status s = VerifyCheckpoint(bad_path, *shard);
    ASSERT_FALSE(s.ok()) << "truncated to " << n;
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << n << ": " << s.ToString();
  }
  WriteAll(bad_path, good + std::string(1, '\0'));
  EXPECT_EQ(VerifyCheckpoint(bad_path, *shard).code(),
            Status::Code::kCorruption);
}

TEST(Checkpoint, ReportsWhichCheckFailed) {
  TempDir dir;
  auto shard = MakeShard();
  ASSERT_NE(shard, nullptr);
  auto info = WriteCheckpoint(*shard, dir.path(), 1);
  ASSERT_TRUE(info.ok());
  std::string bytes = ReadAll(info->path);
  std::string bad = bytes;
  bad[bad.size() - 100] ^= 0x40;  // inside the last block's data
  WriteAll(info->path, bad);
  Status s = VerifyCheckpoint(info->path, *shard);
  EXPECT_NE(s.message().find("CRC32C mismatch"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("block"), std::string::npos) << s.ToString();
  WriteAll(info->path, bytes.substr(0, bytes.size() / 2));
  s = VerifyCheckpoint(info->path, *shard);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.ToString();
}

TEST(Checkpoint, RefusesAnotherLayoutShardOrRule) {
  TempDir dir;
  auto shard = MakeShard(1, 0, RuleKind::kAdam);
  ASSERT_NE(shard, nullptr);
  auto info = WriteCheckpoint(*shard, dir.path(), 1);
  ASSERT_TRUE(info.ok());
  auto other_params = SmallParams();
  other_params[1].shape = {3, 6};
  auto other_layout = MakeShard(1, 0, RuleKind::kAdam, other_params);
  Status s = LoadCheckpoint(info->path, other_layout.get());
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("different layout"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("'b' shape [3,5] vs [3,6]"), std::string::npos)
      << s.ToString();
  auto other_n = MakeShard(2, 0, RuleKind::kAdam);
  s = LoadCheckpoint(info->path, other_n.get());
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("number of pservers 1 vs 2"), std::string::npos)
      << s.ToString();
  auto other_rule = MakeShard(1, 0, RuleKind::kMomentum);
  s = LoadCheckpoint(info->path, other_rule.get());
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("adam"), std::string::npos) << s.ToString();
}

TEST(CheckpointManager, KeepsTheLastK) {
  TempDir dir;
  auto shard = MakeShard();
  ASSERT_NE(shard, nullptr);
  CheckpointManager m(dir.path(), 0, 2);
  for (int i = 1; i <= 5; ++i) {
    Train(shard.get(), 1);
    auto info = m.Save(*shard);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->sequence, static_cast<uint64_t>(i));
  }
  auto list = ListCheckpoints(dir.path(), 0);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].sequence, 5u);
  EXPECT_EQ((*list)[1].sequence, 4u);
}

TEST(CheckpointManager, FallsBackToThePreviousGoodCheckpoint) {
  TempDir dir;
  auto shard = MakeShard();
  ASSERT_NE(shard, nullptr);
  CheckpointManager m(dir.path(), 0, 3);
  Train(shard.get(), 2);
  ASSERT_TRUE(m.Save(*shard).ok());
  Train(shard.get(), 2);
  ASSERT_TRUE(m.Save(*shard).ok());
  const std::string second = Fingerprint(*shard);
  Train(shard.get(), 2);
  auto newest = m.Save(*shard);
  ASSERT_TRUE(newest.ok());
  // Damage the newest: truncate it.
  std::string bytes = ReadAll(newest->path);
  WriteAll(newest->path, bytes.substr(0, bytes.size() - 7));

  auto fresh = MakeShard();
  auto loaded = m.LoadLatest(fresh.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->sequence, 2u);
  EXPECT_EQ(Fingerprint(*fresh), second);

  // With every file damaged the error names each one.
  auto all = ListCheckpoints(dir.path(), 0);
  ASSERT_TRUE(all.ok());
  for (const auto& c : all.value()) WriteAll(c.path, "junk");
  auto none = m.LoadLatest(fresh.get());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Status::Code::kCorruption);
  EXPECT_NE(none.status().message().find("00000000000000000001.ckpt"),
            std::string::npos);
  EXPECT_NE(none.status().message().find("00000000000000000003.ckpt"),
            std::string::npos);
}

TEST(CheckpointManager, EmptyDirectoryIsNotFoundAndStrayFilesAreIgnored) {
  TempDir dir;
  auto shard = MakeShard();
  ASSERT_NE(shard, nullptr);
  WriteAll(dir.path() + "/shard-0-123.ckpt", "not ours");
  WriteAll(dir.path() + "/shard-1-00000000000000000009.ckpt", "other shard");
  WriteAll(dir.path() + "/.shard-0-00000000000000000004.ckpt.tmp",
           "crash leftover");
  CheckpointManager m(dir.path(), 0, 2);
  EXPECT_EQ(m.LoadLatest(shard.get()).status().code(), Status::Code::kNotFound);
  ASSERT_TRUE(m.Save(*shard).ok());
  auto names = ListDir(dir.path());
  ASSERT_TRUE(names.ok());
  for (const auto& n : *names)
    EXPECT_EQ(n.find(".tmp"), std::string::npos) << n;
  EXPECT_TRUE(m.LoadLatest(shard.get()).ok());
}

}  // namespace
}  // namespace fabps::pserver
