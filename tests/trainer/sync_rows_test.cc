// Sync SGD of sparse rows (SendRows with a step, tag 0xA9) through real
// fabps-pserver processes (--mode sync) over tcp;ofi_rxm and shm: two
// trainers pushing rows (overlapping and disjoint ids, repeats, blocks one
// trainer or both leave untouched) give, after every step, bit for bit the
// table of one process applying the summed rows with lazy Adam (a local
// async Shard of the store library); forged, stale and far-ahead pushes are
// refused, counted and logged, and the pserver goes on with the step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "protocol/slot_codec.h"
#include "protocol/wire.h"
#include "pserver/shard.h"
#include "pserver/sparse_rows.h"
#include "tests/trainer/c_client.h"
#include "tests/trainer/pserver_cluster.h"
#include "tests/trainer/raw_trainer.h"
#include "tests/trainer/reference_shard.h"
#include "tests/transport/provider_params.h"
#include "trainer/fabps_c.h"
#include "trainer/pserver_client.h"

namespace fabps::trainer {
namespace {

using testing::PServerCluster;
using testing::RawTrainer;
namespace wire = protocol::wire;

constexpr uint64_t kBlock = 1024;  // elements a block: 64 rows of 16
constexpr uint64_t kRows = 300;    // 5 blocks, the last of 44 rows
constexpr uint64_t kDim = 16;
constexpr uint64_t kPerBlock = kBlock / kDim;
constexpr int64_t kMs = 30000;

std::vector<ParamSpec> Specs() {
  return {{"emb", DType::kFloat32, {kRows, kDim}}};
}

UpdateRuleConfig Rule() {
  UpdateRuleConfig r;
  r.kind = RuleKind::kAdam;  // lazy: per-row state, t per block step
  r.learning_rate = 0.01;
  return r;
}

std::vector<float> InitialTable() {
  std::vector<float> v(kRows * kDim);
  for (size_t i = 0; i < v.size(); i++)
    v[i] = static_cast<float>(i % 23) * 0.25f - 2.0f;
  return v;
}

// What trainer k sends at step s: ids (any order, repeats) and their rows.
struct StepRows {
  std::vector<int64_t> ids;
  std::vector<float> values;
};

// Trainer 0 touches every block (rows 5, 70, 130, 200, 260 and more);
// trainer 1 only blocks 0-2, overlapping trainer 0 on rows 5 and 70. At
// step `last` nobody touches block 4 (rows 256..299).
StepRows RowsOf(int k, uint64_t s, uint64_t last) {
  StepRows r;
  const uint64_t limit = s == last ? 4 * kPerBlock : k == 0 ? kRows : 192;
  if (k == 0) {
    r.ids = {5, 70, 130, 200};
    if (s != last) r.ids.push_back(260);
  } else {
    r.ids = {70, 5};
  }
  std::mt19937_64 rng(100 * s + k);
  for (int i = 0; i < 12; i++)
    r.ids.push_back(static_cast<int64_t>(rng() % limit));
  r.ids.push_back(r.ids[3]);  // a repeat for sure
  r.values.resize(r.ids.size() * kDim);
  for (size_t i = 0; i < r.values.size(); i++) {
    r.values[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) +
                                              1.3 * static_cast<double>(s) +
                                              2.1 * k + 0.05));
  }
  return r;
}

// The rows of repeated ids summed in caller order, as SendRows does before
// sending: distinct ids (first-seen order) and their sums.
StepRows Summed(const StepRows& in) {
  StepRows out;
  std::map<int64_t, size_t> at;
  for (size_t i = 0; i < in.ids.size(); i++) {
    const float* v = in.values.data() + i * kDim;
    auto [it, fresh] = at.emplace(in.ids[i], out.ids.size());
    if (fresh) {
      out.ids.push_back(in.ids[i]);
      out.values.insert(out.values.end(), v, v + kDim);
      continue;
    }
    float* sum = out.values.data() + it->second * kDim;
    for (size_t j = 0; j < kDim; j++) sum[j] += v[j];
  }
  return out;
}

// One process: a local async Shard over the same blocks, fed per block the
// trainers' summed rows of a step as one sparse-rows gradient (the Shard
// adds a row both sent: trainer 0's sum + trainer 1's, as the pserver does).
class Reference {
 public:
  Reference()
      : shard_(testing::NewReferenceShard(Specs(), kBlock, Rule(),
                                          {InitialTable()})) {}
  void Step(const std::vector<StepRows>& trainers) {
    StepRows all;
    for (const StepRows& raw : trainers) {
      StepRows t = Summed(raw);
      all.ids.insert(all.ids.end(), t.ids.begin(), t.ids.end());
      all.values.insert(all.values.end(), t.values.begin(), t.values.end());
    }
    testing::ApplyRowsToShard(shard_.get(), 0, all.ids, all.values, kDim);
  }
  std::vector<float> Table() const { return testing::ParamOfShard(*shard_, 0); }

 private:
  std::unique_ptr<pserver::Shard> shard_;
};

class SyncRowsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string skip;
    if (!transport::testing::OpenOrSkipReason(GetParam(), &skip))
      GTEST_SKIP() << skip;
  }
  void StartCluster(int pservers, int trainers) {
    cluster_ = std::make_unique<PServerCluster>(
        GetParam(), pservers,
        std::vector<std::string>{"--mode", "sync", "--num-trainers",
                                 std::to_string(trainers)});
    ASSERT_TRUE(cluster_->StartAll().ok());
  }
  std::unique_ptr<PServerClient> Trainer(TrainerId id, bool init) {
    PServerClientOptions o;
    o.addresses = cluster_->addresses();
    o.provider = GetParam();
    o.interface_address = "127.0.0.1";  // shm ignores it
    o.block_elements = kBlock;
    o.default_rule = Rule();
    o.init_wait_ms = kMs;
    o.trainer_id = id;
    auto c = PServerClient::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return nullptr;
    if (init) {
      auto mine = (*c)->BeginInitParams(true);
      EXPECT_TRUE(mine.ok() && *mine);
      auto table = InitialTable();
      EXPECT_TRUE(
          (*c)->InitParam(Specs()[0], table.data(), table.size() * 4).ok());
      EXPECT_TRUE((*c)->FinishInitParams().ok());
    }
    return std::move(*c);
  }
  static Status PushStep(PServerClient* c, const StepRows& r, uint64_t s) {
    auto h = c->SendRows("emb", r.ids.data(), r.ids.size(), r.values.data(),
                         r.values.size() * 4, s, Deadline::InMs(kMs));
    if (!h.ok()) return h.status();
    return c->Wait(*h, Deadline::InMs(kMs));
  }
  static std::vector<float> Pull(PServerClient* c) {
    std::vector<float> v(kRows * kDim, -12345.0f);
    Status s =
        c->GetParams({{"emb", v.data(), v.size() * 4}}, Deadline::InMs(kMs));
    EXPECT_TRUE(s.ok()) << s.ToString();
    return v;
  }
  std::string Logs() {
    std::string all;
    for (int i = 0; i < 2; i++)
      all += testing::ReadFileOrEmpty(cluster_->log(i));
    return all;
  }
  std::unique_ptr<PServerCluster> cluster_;
};

TEST_P(SyncRowsTest, TwoTrainersGiveTheSummedRowsBitForBit) {
  StartCluster(2, 2);
  auto a = Trainer(101, true);
  auto b = Trainer(102, false);
  ASSERT_TRUE(a && b);
  constexpr uint64_t kSteps = 5;
  const uint64_t last = kSteps - 1;
  std::vector<std::vector<float>> seen[2] = {
      std::vector<std::vector<float>>(kSteps),
      std::vector<std::vector<float>>(kSteps)};
  auto run = [&](PServerClient* c, int k) {
    for (uint64_t s = 0; s < kSteps; s++) {
      Status st = PushStep(c, RowsOf(k, s, last), s);
      ASSERT_TRUE(st.ok()) << "trainer " << k << " step " << s << ": "
                           << st.ToString();
      seen[k][s] = Pull(c);
    }
  };
  std::thread ta(run, a.get(), 0), tb(run, b.get(), 1);
  ta.join();
  tb.join();
  Reference ref;
  for (uint64_t s = 0; s < kSteps; s++) {
    ref.Step({RowsOf(0, s, last), RowsOf(1, s, last)});
    std::vector<float> want = ref.Table();
    EXPECT_TRUE(seen[0][s] == want) << "trainer 0 after step " << s;
    EXPECT_TRUE(seen[1][s] == want) << "trainer 1 after step " << s;
  }
  // The untouched block 4 still counted its last step: every block is at
  // step kSteps.
  auto step = b->SyncStep(Deadline::InMs(kMs));
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ(*step, kSteps);
  // A rows push without a step is refused in sync mode before it leaves.
  StepRows r = RowsOf(0, kSteps, last);
  auto plain = a->SendRows("emb", r.ids.data(), r.ids.size(), r.values.data(),
                           r.values.size() * 4, Deadline::InMs(kMs));
  EXPECT_EQ(plain.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(Logs().find("after the step deadline"), std::string::npos);
}

// One pserver in sync mode for two trainers: an honest client and a
// hand-made one that forges what an honest client never sends. Each forged
// push is refused with its credit code, counted and logged, nothing of it
// is applied; the hand-made trainer's honest share then completes the step.
TEST_P(SyncRowsTest, ForgedStaleAndFarAheadRowsAreRefused) {
  StartCluster(1, 2);
  auto a = Trainer(301, true);
  ASSERT_TRUE(a);
  std::vector<float> initial = Pull(a.get());
  RawTrainer raw;
  ASSERT_NO_FATAL_FAILURE(
      raw.Register(*cluster_, 4096, GetParam(), 0, /*trainer_id=*/302));
  const uint32_t me = static_cast<uint32_t>(raw.reg.trainer_index);
  // Packs a 0xA9 slot for block `block` with `count` rows (the first id
  // `row`, then row+1 ...) into raw.buf; returns its bytes.
  auto pack = [&](uint32_t kind, uint32_t block, uint64_t step, uint64_t count,
                  uint64_t row, uint64_t ids_written) {
    std::memset(raw.buf.data(), 0, raw.buf.size());
    protocol::StepHeader h{kind, block, step};
    std::memcpy(raw.buf.data(), &h, sizeof(h));
    std::memcpy(raw.buf.data() + protocol::kStepHeaderBytes, &count, 8);
    for (uint64_t i = 0; i < ids_written; i++) {
      uint64_t id = row + i;
      std::memcpy(raw.buf.data() +
                      protocol::RowsIdsOffset(wire::PushKind::kRowsStep) +
                      8 * i,
                  &id, 8);
    }
    std::vector<float> ones(ids_written * kDim, 1.0f);
    std::memcpy(raw.buf.data() + protocol::RowsValuesOffset(
                                     wire::PushKind::kRowsStep, ids_written),
                ones.data(), ones.size() * 4);
    return protocol::RowsSlotBytes(wire::PushKind::kRowsStep, ids_written,
                                   kDim * 4);
  };
  const uint32_t kStepRows = static_cast<uint32_t>(wire::PushKind::kRowsStep);
  struct Forged {
    const char* what;
    wire::PushKind word;
    uint32_t kind, block;
    uint64_t step, count, row;
    Status::Code code;
  };
  const std::vector<Forged> forged = {
      {"header kind differs from the word", wire::PushKind::kRowsStep,
       static_cast<uint32_t>(wire::PushKind::kDenseStep), 0, 0, 1, 0,
       Status::Code::kCorruption},
      {"header names another block", wire::PushKind::kRowsStep, kStepRows, 1, 0,
       1, 0, Status::Code::kCorruption},
      {"more rows than the slot holds", wire::PushKind::kRowsStep, kStepRows, 0,
       0, 1000, 0, Status::Code::kInvalidArgument},
      {"a count near 2^64", wire::PushKind::kRowsStep, kStepRows, 0, 0,
       ~uint64_t{0} / 2, 0, Status::Code::kInvalidArgument},
      {"row id outside the block", wire::PushKind::kRowsStep, kStepRows, 0, 0,
       1, 64, Status::Code::kInvalidArgument},
      {"step far ahead", wire::PushKind::kRowsStep, kStepRows, 0, 1000, 1, 0,
       Status::Code::kInvalidArgument},
      {"a step-less rows push in sync mode", wire::PushKind::kRows, kStepRows,
       0, 0, 1, 0, Status::Code::kFailedPrecondition},
  };
  for (const Forged& f : forged) {
    size_t bytes = pack(f.kind, f.block, f.step, f.count, f.row, 1);
    ASSERT_NO_FATAL_FAILURE(
        raw.Write(wire::EncodePush({me, 0, 0, f.word}), bytes));
    auto e = raw.ep->WaitImmediate(Deadline::InMs(kMs));
    ASSERT_TRUE(e.ok()) << f.what << ": " << e.status().ToString();
    auto cr = wire::DecodeCredit(e->data);
    EXPECT_EQ(cr.code, f.code) << f.what;
    EXPECT_EQ(cr.slot, 0u);
  }
  auto st = raw.Status();
  EXPECT_EQ(st.gradients_rejected, static_cast<int64_t>(forged.size()));
  EXPECT_EQ(st.gradients_applied, 0);
  EXPECT_TRUE(Pull(a.get()) == initial);
  // Step 0: the hand-made trainer's honest share (rows 3 and 4 of block 0,
  // nothing of blocks 1-4, one slot each) and the client's step.
  Reference ref;
  StepRows mine;
  mine.ids = {3, 4};
  mine.values.assign(2 * kDim, 1.0f);
  for (uint32_t block = 0; block < 5; block++) {
    const uint64_t n = block == 0 ? 2 : 0;
    size_t bytes = pack(kStepRows, block, 0, n, 3, n);
    ASSERT_NO_FATAL_FAILURE(raw.Write(
        wire::EncodePush({me, block, block, wire::PushKind::kRowsStep}), bytes,
        block));
  }
  StepRows theirs = RowsOf(0, 0, 99);
  ASSERT_TRUE(PushStep(a.get(), theirs, 0).ok());
  for (int i = 0; i < 5; i++) {
    auto e = raw.ep->WaitImmediate(Deadline::InMs(kMs));
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_EQ(wire::DecodeCredit(e->data).code, Status::Code::kOk);
  }
  ref.Step({theirs, mine});
  EXPECT_TRUE(Pull(a.get()) == ref.Table());
  // Step 0 again from the hand-made trainer: stale.
  size_t bytes = pack(kStepRows, 0, 0, 0, 0, 0);
  ASSERT_NO_FATAL_FAILURE(raw.Write(
      wire::EncodePush({me, 0, 0, wire::PushKind::kRowsStep}), bytes));
  auto e = raw.ep->WaitImmediate(Deadline::InMs(kMs));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(wire::DecodeCredit(e->data).code,
            Status::Code::kFailedPrecondition);
  EXPECT_TRUE(Pull(a.get()) == ref.Table());
  std::string logs = Logs();
  for (const char* want :
       {"sync rows push of trainer 302", "says kind 168 block 0",
        "row count 1000 above", "step 1000 from trainer 1 is too far ahead",
        "is stale: the block is at step 1", "this pserver runs in sync mode"}) {
    EXPECT_NE(logs.find(want), std::string::npos) << want << "\n" << logs;
  }
  EXPECT_EQ(raw.Status().gradients_rejected,
            static_cast<int64_t>(forged.size()) + 1);
}

// The C API's rows step beside a C++ trainer: the same sums, an empty share
// from C (0 rows), a negative step refused.
TEST_P(SyncRowsTest, CApiPushesRowSteps) {
  StartCluster(2, 2);
  auto a = Trainer(401, true);
  ASSERT_TRUE(a);
  fabps_pserver_client* c = testing::NewCPserverClient(
      GetParam(), cluster_->addresses(), kBlock, 402);
  ASSERT_NE(c, nullptr);
  // Step 0: trainer 1's rows from C; step 1: an empty share from C.
  Reference ref;
  for (uint64_t s = 0; s < 2; s++) {
    StepRows mine = s == 0 ? RowsOf(1, s, 99) : StepRows();
    int rc = FABPS_ERR;
    std::thread tc([&] {
      fabps_push* h = nullptr;
      rc = fabps_send_rows_step(c, "emb", mine.ids.data(), mine.ids.size(),
                                mine.values.data(), mine.values.size() * 4,
                                static_cast<int64_t>(s), kMs, &h);
      if (rc == FABPS_OK) rc = fabps_wait(c, h, kMs);
    });
    StepRows theirs = RowsOf(0, s, 99);
    ASSERT_TRUE(PushStep(a.get(), theirs, s).ok());
    tc.join();
    ASSERT_EQ(rc, FABPS_OK) << fabps_pserver_client_last_error(c);
    ref.Step({theirs, mine});
  }
  EXPECT_TRUE(Pull(a.get()) == ref.Table());
  fabps_push* h = nullptr;
  EXPECT_EQ(fabps_send_rows_step(c, "emb", nullptr, 0, nullptr, 0, -1, kMs, &h),
            FABPS_ERR_ARGUMENT);
  EXPECT_EQ(h, nullptr);
  int64_t rows_ids[1] = {1};
  float row[kDim] = {};
  EXPECT_NE(fabps_send_rows(c, "emb", rows_ids, 1, row, sizeof(row), kMs, &h),
            FABPS_OK);  // no step in sync mode
  fabps_release_pserver_client(c);
}

FABPS_INSTANTIATE_TCP_AND_SHM(SyncRowsTest);

}  // namespace
}  // namespace fabps::trainer
