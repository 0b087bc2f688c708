// Rows of an embedding-like table through real fabps-pserver processes:
// SendRows / GetRows over tcp;ofi_rxm and shm, rows spanning two pservers,
// exact SGD with duplicates, lazy Adam against the store library (a local
// Shard fed the same sparse-rows gradients), refused bad input, and the
// per-row optimizer state surviving a kill -9 through a checkpoint.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "pserver/shard.h"
#include "pserver/sparse_rows.h"
#include "tests/trainer/client_params.h"
#include "tests/trainer/pserver_cluster.h"
#include "tests/trainer/reference_shard.h"
#include "tests/transport/provider_params.h"
#include "trainer/pserver_client.h"
#include "transport/fabric.h"

namespace fabps::trainer {
namespace {

using testing::ClientOptions;
using testing::PServerCluster;

// kBlock and kMs as ClientOptions sets them up.
constexpr uint64_t kBlock = testing::kBlock;  // elements a block: 64 rows of 16
constexpr uint64_t kRows = 300;               // 5 blocks, the last of 44 rows
constexpr uint64_t kDim = 16;
constexpr int64_t kMs = testing::kMs;

std::vector<ParamSpec> Specs() {
  return {{"bias", DType::kFloat32, {10}},
          {"emb", DType::kFloat32, {kRows, kDim}}};
}

float InitValue(size_t i) { return static_cast<float>((i * 7) % 100); }

std::vector<float> InitialTable() {
  std::vector<float> v(kRows * kDim);
  for (size_t i = 0; i < v.size(); i++) v[i] = InitValue(i);
  return v;
}

// Connects, wins the election (or finds the pservers initialized: then
// nothing is sent) and initializes every parameter of Specs().
Result<std::unique_ptr<PServerClient>> Connect(const PServerCluster& cluster,
                                               const std::string& provider,
                                               RuleKind rule = RuleKind::kSgd,
                                               double lr = 1.0) {
  FABPS_ASSIGN_OR_RETURN(auto c, PServerClient::Connect(ClientOptions(
                                     cluster, provider, rule, lr)));
  FABPS_ASSIGN_OR_RETURN(bool mine, c->BeginInitParams(true));
  if (!mine) return c;
  std::vector<float> bias(10, 1.0f);
  FABPS_RETURN_IF_ERROR(c->InitParam(Specs()[0], bias.data(), 40));
  auto table = InitialTable();
  FABPS_RETURN_IF_ERROR(
      c->InitParam(Specs()[1], table.data(), table.size() * 4));
  FABPS_RETURN_IF_ERROR(c->FinishInitParams());
  return c;
}

std::vector<float> PullTable(PServerClient* c) {
  std::vector<float> v(kRows * kDim, -12345.0f);
  Status s =
      c->GetParams({{"emb", v.data(), v.size() * 4}}, Deadline::InMs(kMs));
  EXPECT_TRUE(s.ok()) << s.ToString();
  return v;
}

Status Push(PServerClient* c, const std::vector<int64_t>& ids,
            const std::vector<float>& rows) {
  FABPS_ASSIGN_OR_RETURN(auto h,
                         c->SendRows("emb", ids.data(), ids.size(), rows.data(),
                                     rows.size() * 4, Deadline::InMs(kMs)));
  return c->Wait(h, Deadline::InMs(kMs));
}

Result<std::vector<float>> Pull(PServerClient* c,
                                const std::vector<int64_t>& ids,
                                int64_t ms = kMs) {
  std::vector<float> out(ids.size() * kDim, -12345.0f);
  FABPS_ASSIGN_OR_RETURN(auto h,
                         c->GetRows("emb", ids.data(), ids.size(), out.data(),
                                    out.size() * 4, Deadline::InMs(ms)));
  FABPS_RETURN_IF_ERROR(c->Wait(h, Deadline::InMs(ms)));
  return out;
}

// Row ids of step `step`: unordered, with repeats, in most blocks.
std::vector<int64_t> StepIds(int step, size_t n) {
  std::mt19937_64 rng(1000 + step);
  std::vector<int64_t> ids(n);
  for (auto& id : ids) id = static_cast<int64_t>(rng() % kRows);
  ids.push_back(ids[0]);  // a repeat for sure
  return ids;
}

std::vector<float> StepGrads(int step, size_t n, float scale) {
  std::vector<float> g(n * kDim);
  for (size_t i = 0; i < g.size(); i++)
    g[i] = scale * (static_cast<float>((i * 3 + step * 5) % 9) - 4.0f);
  return g;
}

// The store library's answer: one local Shard over the same blocks (one
// pserver), fed each block's rows as the sparse-rows format with the
// repeats left in (the Shard sums them itself).
class Reference {
 public:
  Reference(RuleKind rule, double lr) {
    UpdateRuleConfig r;
    r.kind = rule;
    r.learning_rate = lr;
    shard_ = testing::NewReferenceShard(
        Specs(), kBlock, r, {std::vector<float>(10, 1.0f), InitialTable()});
  }
  void Apply(const std::vector<int64_t>& ids, const std::vector<float>& g) {
    testing::ApplyRowsToShard(shard_.get(), 1, ids, g, kDim);
  }
  std::vector<float> Table() const { return testing::ParamOfShard(*shard_, 1); }

 private:
  std::unique_ptr<pserver::Shard> shard_;
};

class RowsTest : public transport::testing::ProviderTest {};

TEST_P(RowsTest, SgdRowsOnTwoPserversAreExact) {
  PServerCluster cluster(GetParam(), 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = Connect(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto layout = (*c)->layout(Deadline::InMs(kMs));
  ASSERT_TRUE(layout.ok());
  // The table's blocks are whole rows and live on both pservers.
  std::vector<int> owners(2, 0);
  for (const auto& b : (*layout)->blocks()) {
    if (b.param != 1) continue;
    EXPECT_EQ(b.first_element % kDim, 0u);
    EXPECT_EQ(b.num_elements % kDim, 0u);
    owners[b.pserver]++;
  }
  EXPECT_GT(owners[0], 0);
  EXPECT_GT(owners[1], 0);

  std::vector<float> want = InitialTable();
  for (int step = 0; step < 3; step++) {
    auto ids = StepIds(step, 120);
    auto g = StepGrads(step, ids.size(), 1.0f);
    ASSERT_TRUE(Push(c->get(), ids, g).ok());
    // lr 1 and small integers: w - sum of the repeated rows, exactly.
    for (size_t i = 0; i < ids.size(); i++)
      for (size_t k = 0; k < kDim; k++)
        want[ids[i] * kDim + k] -= g[i * kDim + k];
  }
  std::vector<float> got = PullTable(c->get());
  for (size_t i = 0; i < got.size(); i++)
    ASSERT_EQ(got[i], want[i]) << "element " << i;

  // Rows read back in any order, repeated, equal the dense pull.
  std::vector<int64_t> ids = {299, 0, 64, 63, 299, 128, 5, 200, 256, 5};
  auto rows = Pull(c->get(), ids);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  for (size_t i = 0; i < ids.size(); i++)
    for (size_t k = 0; k < kDim; k++)
      ASSERT_EQ((*rows)[i * kDim + k], want[ids[i] * kDim + k]) << i;
  // Every row at once, backwards.
  std::vector<int64_t> all(kRows);
  for (size_t r = 0; r < kRows; r++)
    all[r] = static_cast<int64_t>(kRows - 1 - r);
  auto every = Pull(c->get(), all);
  ASSERT_TRUE(every.ok()) << every.status().ToString();
  for (size_t r = 0; r < kRows; r++)
    for (size_t k = 0; k < kDim; k++)
      ASSERT_EQ((*every)[r * kDim + k], want[(kRows - 1 - r) * kDim + k]);
}

// Every rule with state, lazily per row, bit for bit the store library's.
TEST_P(RowsTest, LazyRulesMatchTheStoreLibrary) {
  for (RuleKind rule :
       {RuleKind::kAdam, RuleKind::kAdaGrad, RuleKind::kMomentum}) {
    SCOPED_TRACE(RuleName(rule));
    PServerCluster cluster(GetParam(), 2);
    ASSERT_TRUE(cluster.StartAll().ok());
    auto c = Connect(cluster, GetParam(), rule, 0.01);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    Reference ref(rule, 0.01);
    for (int step = 0; step < 5; step++) {
      // Few rows a step: some blocks untouched in some steps (their t and
      // state stay), repeats summed.
      auto ids = StepIds(step, step % 2 == 0 ? 6 : 40);
      auto g = StepGrads(step, ids.size(), 0.25f);
      ASSERT_TRUE(Push(c->get(), ids, g).ok());
      ref.Apply(ids, g);
    }
    std::vector<float> got = PullTable(c->get());
    std::vector<float> want = ref.Table();
    for (size_t i = 0; i < got.size(); i++)
      ASSERT_EQ(got[i], want[i]) << "element " << i;  // same kernels
    // Lazy: a row no step touched is still its initial value.
    std::vector<bool> touched(kRows, false);
    for (int step = 0; step < 5; step++)
      for (int64_t id : StepIds(step, step % 2 == 0 ? 6 : 40))
        touched[id] = true;
    auto initial = InitialTable();
    for (size_t r = 0; r < kRows; r++) {
      if (touched[r]) continue;
      for (size_t k = 0; k < kDim; k++)
        ASSERT_EQ(got[r * kDim + k], initial[r * kDim + k]) << "row " << r;
    }
  }
}

TEST_P(RowsTest, BadRowsAreRefusedAndNothingIsApplied) {
  PServerCluster cluster(GetParam(), 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = Connect(cluster, GetParam());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<float> one(kDim, 1.0f), two(2 * kDim, 1.0f);
  auto send = [&](const std::string& name, std::vector<int64_t> ids,
                  size_t bytes) {
    return (*c)
        ->SendRows(name, ids.data(), ids.size(), two.data(), bytes,
                   Deadline::InMs(kMs))
        .status();
  };
  auto read = [&](const std::string& name, std::vector<int64_t> ids,
                  size_t bytes) {
    return (*c)
        ->GetRows(name, ids.data(), ids.size(), two.data(), bytes,
                  Deadline::InMs(kMs))
        .status();
  };
  using Code = Status::Code;
  EXPECT_EQ(send("emb", {3, 300}, 2 * kDim * 4).code(), Code::kInvalidArgument);
  EXPECT_EQ(send("emb", {3, -1}, 2 * kDim * 4).code(), Code::kInvalidArgument);
  EXPECT_EQ(send("emb", {3, 4}, kDim * 4).code(), Code::kInvalidArgument);
  EXPECT_EQ(send("emb", {3}, 2 * kDim * 4).code(), Code::kInvalidArgument);
  EXPECT_EQ(send("bias", {3}, 4).code(), Code::kInvalidArgument);
  EXPECT_EQ(send("nope", {3}, kDim * 4).code(), Code::kNotFound);
  EXPECT_EQ(read("emb", {300}, kDim * 4).code(), Code::kInvalidArgument);
  EXPECT_EQ(read("emb", {1, 2}, kDim * 4).code(), Code::kInvalidArgument);
  Status msg = send("emb", {3, 300}, 2 * kDim * 4);
  EXPECT_NE(msg.message().find("300"), std::string::npos) << msg.ToString();
  EXPECT_NE(msg.message().find("emb"), std::string::npos) << msg.ToString();
  EXPECT_EQ(PullTable(c->get()), InitialTable());
  // And the client still works.
  ASSERT_TRUE(Push(c->get(), {7}, one).ok());
  EXPECT_EQ(PullTable(c->get())[7 * kDim], InitValue(7 * kDim) - 1.0f);
}

TEST_P(RowsTest, AdamRowStateSurvivesKillThroughACheckpoint) {
  PServerCluster cluster(GetParam(), 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  Reference ref(RuleKind::kAdam, 0.01);
  int step = 0;
  auto train = [&](PServerClient* c, int steps) {
    for (int i = 0; i < steps; i++, step++) {
      auto ids = StepIds(step, 30);
      auto g = StepGrads(step, ids.size(), 0.5f);
      Status s = Push(c, ids, g);
      ASSERT_TRUE(s.ok()) << s.ToString();
      ref.Apply(ids, g);
    }
  };
  std::vector<int64_t> all(kRows);
  for (size_t r = 0; r < kRows; r++) all[r] = static_cast<int64_t>(r);
  auto c = Connect(cluster, GetParam(), RuleKind::kAdam, 0.01);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  train(c->get(), 4);
  // Checkpoint files are named by pserver index: saving into pserver 0's
  // --checkpoint-dir is what it loads when it starts again.
  ASSERT_TRUE(
      (*c)->SaveModel(cluster.dir().File("ckpt-0"), Deadline::InMs(kMs)).ok());
  auto saved = Pull(c->get(), all);
  ASSERT_TRUE(saved.ok());
  ASSERT_EQ(*saved, ref.Table());
  cluster.proc(0).Kill();  // SIGKILL: no checkpoint on the way out
  ASSERT_TRUE(cluster.Start(0).ok());
  // The client reconnects (its next call fails or reconnects first); the
  // rows come back bit for bit, then training goes on where it was.
  Result<std::vector<float>> back = Status::Unavailable("not read yet");
  // (The first call may still talk to the dead process's endpoint: it
  // fails within its deadline, and the next one reconnects.)
  for (int i = 0; i < 10 && !back.ok(); i++) back = Pull(c->get(), all, 3000);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *saved);
  train(c->get(), 3);
  auto after = Pull(c->get(), all);
  ASSERT_TRUE(after.ok());
  std::vector<float> want = ref.Table();
  for (size_t i = 0; i < want.size(); i++)
    ASSERT_EQ((*after)[i], want[i]) << "element " << i;
}

FABPS_INSTANTIATE_TCP_AND_SHM(RowsTest);

}  // namespace
}  // namespace fabps::trainer
