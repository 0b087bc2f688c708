// Sync SGD through real fabps-pserver processes (--mode sync) over
// tcp;ofi_rxm and shm: two trainers' steps give bit for bit what one
// process applying the summed gradients gets (a local Shard of the store
// library), a pull after a step's Wait sees exactly that step; a trainer
// that dies holds a step only until --step-deadline-ms (then the pservers
// apply what arrived, log it and count it) and, restarted with its id,
// rejoins at the step SyncStep names; a stale or far-future step is refused
// and the pservers keep serving.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "pserver/shard.h"
#include "tests/trainer/c_client.h"
#include "tests/trainer/pserver_cluster.h"
#include "tests/transport/provider_params.h"
#include "tests/util/wait_until.h"
#include "trainer/fabps_c.h"
#include "trainer/pserver_client.h"
#include "trainer/pserver_connection.h"

namespace fabps::trainer {
namespace {

using testing::PServerCluster;

constexpr uint64_t kBlock = 512;  // elements a block
constexpr uint64_t kW = 2000;     // "w": 4 blocks over the two pservers
constexpr uint64_t kB = 10;       // "b": one block
constexpr int64_t kMs = 30000;

std::vector<ParamSpec> Specs() {
  return {{"w", DType::kFloat32, {kW}}, {"b", DType::kFloat32, {kB}}};
}

UpdateRuleConfig Rule() {
  UpdateRuleConfig r;
  r.kind = RuleKind::kAdam;
  r.learning_rate = 0.01;
  return r;
}

float Init(size_t i) { return static_cast<float>(i % 17) * 0.125f - 1.0f; }

// Trainer k's gradient of element i at step s: deterministic, different
// for each trainer and step.
float Grad(int k, uint64_t s, size_t i) {
  return static_cast<float>(std::sin(0.37 * static_cast<double>(i) +
                                     1.3 * static_cast<double>(s) + 2.1 * k));
}

struct Model {
  std::vector<float> w = std::vector<float>(kW);
  std::vector<float> b = std::vector<float>(kB);
  std::vector<ParamBuffer> Buffers() {
    return {{"w", w.data(), w.size() * 4}, {"b", b.data(), b.size() * 4}};
  }
  static Model Gradient(int k, uint64_t s) {
    Model g;
    for (size_t i = 0; i < kW; i++) g.w[i] = Grad(k, s, i);
    for (size_t i = 0; i < kB; i++) g.b[i] = Grad(k, s, kW + i);
    return g;
  }
  bool operator==(const Model& o) const {
    return std::memcmp(w.data(), o.w.data(), kW * 4) == 0 &&
           std::memcmp(b.data(), o.b.data(), kB * 4) == 0;
  }
};

// One process doing the same steps: a local async Shard of every block,
// fed the sum of the trainers' gradients (in float, as the pservers add).
class Reference {
 public:
  Reference() {
    auto layout = protocol::Layout::Build(Specs(), kBlock, 1);
    EXPECT_TRUE(layout.ok());
    pserver::ShardOptions o;
    o.default_rule = Rule();
    o.num_threads = 1;
    auto s = pserver::Shard::Create(*layout, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    shard_ = std::move(*s);
    Model init = Initial();
    ForEachBlock(&init, [&](uint32_t id, float* p, size_t n) {
      EXPECT_TRUE(shard_->InitBlock(id, p, n * 4).ok());
    });
  }
  static Model Initial() {
    Model m;
    for (size_t i = 0; i < kW; i++) m.w[i] = Init(i);
    for (size_t i = 0; i < kB; i++) m.b[i] = Init(kW + i);
    return m;
  }
  // One step with the gradients of `trainers` summed.
  void Step(const std::vector<int>& trainers, uint64_t s) {
    Model sum = Model::Gradient(trainers[0], s);
    for (size_t t = 1; t < trainers.size(); t++) {
      Model g = Model::Gradient(trainers[t], s);
      for (size_t i = 0; i < kW; i++) sum.w[i] += g.w[i];
      for (size_t i = 0; i < kB; i++) sum.b[i] += g.b[i];
    }
    ForEachBlock(&sum, [&](uint32_t id, float* p, size_t n) {
      pserver::GradientRef g;
      g.block = id;
      g.data = p;
      g.bytes = n * 4;
      Status st = shard_->Apply(g, Deadline::InMs(kMs));
      EXPECT_TRUE(st.ok()) << st.ToString();
    });
  }
  Model Values() {
    Model m;
    ForEachBlock(&m, [&](uint32_t id, float* p, size_t n) {
      EXPECT_TRUE(shard_->ReadValues(id, p, n * 4).ok());
    });
    return m;
  }

 private:
  template <typename Fn>
  void ForEachBlock(Model* m, Fn&& fn) {
    for (const auto& b : shard_->layout().blocks()) {
      float* base = b.param == 0 ? m->w.data() : m->b.data();
      fn(b.id, base + b.first_element, b.num_elements);
    }
  }
  std::unique_ptr<pserver::Shard> shard_;
};

class SyncSgdTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string skip;
    if (!transport::testing::OpenOrSkipReason(GetParam(), &skip))
      GTEST_SKIP() << skip;
  }
  // Two pservers in sync mode for `trainers` trainers.
  void StartCluster(int trainers, int64_t step_deadline_ms) {
    cluster_ = std::make_unique<PServerCluster>(
        GetParam(), 2,
        std::vector<std::string>{"--mode", "sync", "--num-trainers",
                                 std::to_string(trainers), "--step-deadline-ms",
                                 std::to_string(step_deadline_ms)});
    ASSERT_TRUE(cluster_->StartAll().ok());
  }
  PServerClientOptions Options(TrainerId id) {
    PServerClientOptions o;
    o.addresses = cluster_->addresses();
    o.provider = GetParam();
    o.interface_address = "127.0.0.1";  // shm ignores it
    o.block_elements = kBlock;
    o.default_rule = Rule();
    o.init_wait_ms = kMs;
    o.trainer_id = id;
    return o;
  }
  // Connects trainer `id`; the first one initializes the parameters.
  std::unique_ptr<PServerClient> Trainer(TrainerId id, bool init) {
    auto c = PServerClient::Connect(Options(id));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return nullptr;
    if (init) {
      auto mine = (*c)->BeginInitParams(true);
      EXPECT_TRUE(mine.ok() && *mine);
      Model m = Reference::Initial();
      EXPECT_TRUE((*c)->InitParam(Specs()[0], m.w.data(), kW * 4).ok());
      EXPECT_TRUE((*c)->InitParam(Specs()[1], m.b.data(), kB * 4).ok());
      EXPECT_TRUE((*c)->FinishInitParams().ok());
    }
    return std::move(*c);
  }
  // Pushes trainer k's gradient of step s and waits until it is applied.
  static Status PushStep(PServerClient* c, int k, uint64_t s) {
    Model g = Model::Gradient(k, s);
    auto h = c->SendGrads(g.Buffers(), s, Deadline::InMs(kMs));
    if (!h.ok()) return h.status();
    return c->Wait(*h, Deadline::InMs(kMs));
  }
  static Model Pull(PServerClient* c) {
    Model m;
    Status s = c->GetParams(m.Buffers(), Deadline::InMs(kMs));
    EXPECT_TRUE(s.ok()) << s.ToString();
    return m;
  }
  std::string Logs() {
    return testing::ReadFileOrEmpty(cluster_->log(0)) +
           testing::ReadFileOrEmpty(cluster_->log(1));
  }
  std::unique_ptr<PServerCluster> cluster_;
};

TEST_P(SyncSgdTest, TwoTrainersGiveTheSummedStepsBitForBit) {
  StartCluster(2, 60000);
  auto a = Trainer(101, true);
  auto b = Trainer(102, false);
  ASSERT_TRUE(a && b);
  auto step = a->SyncStep(Deadline::InMs(kMs));
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ(*step, 0u);
  constexpr uint64_t kSteps = 6;
  // What each trainer pulled after each step.
  std::vector<Model> seen[2] = {std::vector<Model>(kSteps),
                                std::vector<Model>(kSteps)};
  auto run = [&](PServerClient* c, int k) {
    for (uint64_t s = 0; s < kSteps; s++) {
      Status st = PushStep(c, k, s);
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
    ref.Step({0, 1}, s);
    Model want = ref.Values();
    EXPECT_TRUE(seen[0][s] == want) << "trainer 0 after step " << s;
    EXPECT_TRUE(seen[1][s] == want) << "trainer 1 after step " << s;
  }
  step = b->SyncStep(Deadline::InMs(kMs));
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(*step, kSteps);
  EXPECT_EQ(Logs().find("after the step deadline"), std::string::npos);
}

TEST_P(SyncSgdTest, DeadTrainerHoldsAStepOnlyUntilTheDeadline) {
  StartCluster(2, 1500);
  auto a = Trainer(201, true);
  auto b = Trainer(202, false);
  ASSERT_TRUE(a && b);
  Reference ref;
  // Step 0 together.
  Status sb;
  std::thread tb([&] { sb = PushStep(b.get(), 1, 0); });
  ASSERT_TRUE(PushStep(a.get(), 0, 0).ok());
  tb.join();
  ASSERT_TRUE(sb.ok()) << sb.ToString();
  ref.Step({0, 1}, 0);
  // Trainer b dies; a's step 1 is applied alone after the deadline.
  b.reset();
  Status s1 = PushStep(a.get(), 0, 1);
  ASSERT_TRUE(s1.ok()) << s1.ToString();
  ref.Step({0}, 1);
  EXPECT_TRUE(Pull(a.get()) == ref.Values());
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        return Logs().find("sync step 1: ") != std::string::npos &&
               Logs().find("after the step deadline") != std::string::npos;
      },
      Deadline::InMs(10000)))
      << Logs();
  // The counter in GetStatus.
  int64_t forced = 0;
  for (uint32_t i = 0; i < 2; i++) {
    auto conn = PServerConnection::Open(i, cluster_->addresses()[i], 10000);
    ASSERT_TRUE(conn.ok());
    rpc::pserver::PsStatus st;
    ASSERT_TRUE(
        (*conn)
            ->Call("GetStatus",
                   [&](rpc::pserver::PServerClient& c) { c.GetStatus(st); })
            .ok());
    EXPECT_EQ(st.mode, 1);
    EXPECT_EQ(st.sync_step, 2);
    forced += st.sync_steps_forced;
  }
  EXPECT_EQ(forced, 5);  // every block of the model, once
  // Restarted with its id, b rejoins at the current step: step 2 is
  // applied with both gradients.
  b = Trainer(202, false);
  ASSERT_TRUE(b);
  auto step = b->SyncStep(Deadline::InMs(kMs));
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  ASSERT_EQ(*step, 2u);
  EXPECT_TRUE(Pull(b.get()) == ref.Values());
  std::thread tb2([&] { sb = PushStep(b.get(), 1, *step); });
  ASSERT_TRUE(PushStep(a.get(), 0, 2).ok());
  tb2.join();
  ASSERT_TRUE(sb.ok()) << sb.ToString();
  ref.Step({0, 1}, 2);
  EXPECT_TRUE(Pull(a.get()) == ref.Values());
  EXPECT_TRUE(Pull(b.get()) == ref.Values());
  // A third trainer has no place in a job of two.
  auto c = PServerClient::Connect(Options(203));
  ASSERT_TRUE(c.ok());
  Model m;
  Status refused = (*c)->GetParams(m.Buffers(), Deadline::InMs(kMs));
  EXPECT_EQ(refused.code(), Status::Code::kResourceExhausted)
      << refused.ToString();
}

TEST_P(SyncSgdTest, BadStepsAreRefusedAndTheServerGoesOn) {
  StartCluster(1, 60000);
  auto a = Trainer(301, true);
  ASSERT_TRUE(a);
  Reference ref;
  ASSERT_TRUE(PushStep(a.get(), 0, 0).ok());
  ref.Step({0}, 0);
  // From the past.
  Status stale = PushStep(a.get(), 0, 0);
  EXPECT_EQ(stale.code(), Status::Code::kFailedPrecondition)
      << stale.ToString();
  // From the far future.
  Status ahead = PushStep(a.get(), 0, 1000);
  EXPECT_EQ(ahead.code(), Status::Code::kInvalidArgument) << ahead.ToString();
  // A step-less push in sync mode is refused before anything moves.
  Model g = Model::Gradient(0, 1);
  auto plain = a->SendGrads(g.Buffers(), Deadline::InMs(kMs));
  EXPECT_EQ(plain.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_TRUE(Pull(a.get()) == ref.Values());
  // The right step still goes through.
  Status ok = PushStep(a.get(), 0, 1);
  ASSERT_TRUE(ok.ok()) << ok.ToString();
  ref.Step({0}, 1);
  EXPECT_TRUE(Pull(a.get()) == ref.Values());
  std::string logs = Logs();
  EXPECT_NE(logs.find("is stale: the block is at step 1"), std::string::npos)
      << logs;
  EXPECT_NE(logs.find("step 1000 from trainer 0 is too far ahead"),
            std::string::npos)
      << logs;
}

// The C API's step push beside a C++ trainer: the same sums, the step from
// fabps_sync_step, a stale step and a negative one refused.
TEST_P(SyncSgdTest, CApiPushesSteps) {
  StartCluster(2, 60000);
  auto a = Trainer(501, true);
  ASSERT_TRUE(a);
  fabps_pserver_client* c = testing::NewCPserverClient(
      GetParam(), cluster_->addresses(), kBlock, 502);
  ASSERT_NE(c, nullptr);
  const char* names[2] = {"w", "b"};
  auto c_push = [&](uint64_t s) {
    Model g = Model::Gradient(1, s);
    void* bufs[2] = {g.w.data(), g.b.data()};
    size_t bytes[2] = {kW * 4, kB * 4};
    fabps_push* h = nullptr;
    int rc = fabps_send_grads_step(c, names, bufs, bytes, 2,
                                   static_cast<int64_t>(s), kMs, &h);
    if (rc != FABPS_OK) return rc;
    return fabps_wait(c, h, kMs);
  };
  int64_t step = -1;
  ASSERT_EQ(fabps_sync_step(c, kMs, &step), FABPS_OK)
      << fabps_pserver_client_last_error(c);
  EXPECT_EQ(step, 0);
  Reference ref;
  for (uint64_t s = 0; s < 3; s++) {
    int rc = FABPS_ERR;
    std::thread tc([&] { rc = c_push(s); });
    ASSERT_TRUE(PushStep(a.get(), 0, s).ok());
    tc.join();
    ASSERT_EQ(rc, FABPS_OK) << fabps_pserver_client_last_error(c);
    ref.Step({0, 1}, s);
  }
  Model m;
  void* bufs[2] = {m.w.data(), m.b.data()};
  size_t bytes[2] = {kW * 4, kB * 4};
  ASSERT_EQ(fabps_get_params(c, names, bufs, bytes, 2, kMs), FABPS_OK);
  EXPECT_TRUE(m == ref.Values());
  ASSERT_EQ(fabps_sync_step(c, kMs, &step), FABPS_OK);
  EXPECT_EQ(step, 3);
  EXPECT_NE(c_push(1), FABPS_OK);  // stale
  fabps_push* h = nullptr;
  EXPECT_EQ(fabps_send_grads_step(c, names, bufs, bytes, 2, -1, kMs, &h),
            FABPS_ERR_ARGUMENT);
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(std::string(fabps_pserver_client_last_error(c)).find("step < 0"),
            std::string::npos);
  fabps_release_pserver_client(c);
}

FABPS_INSTANTIATE_TCP_AND_SHM(SyncSgdTest);

}  // namespace
}  // namespace fabps::trainer
