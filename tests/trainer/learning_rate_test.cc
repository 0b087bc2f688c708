// PServer.SetLearningRates with real fabps-pserver processes: a new rate
// reaches every block of its parameter on every pserver, bad rates and
// names are refused naming the parameter (by the client and, sent raw, by
// the pserver), a linear-decay rule keeps its schedule, and a pserver
// restarted from its checkpoints applies the latest rate.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/trainer/client_params.h"
#include "tests/trainer/pserver_cluster.h"
#include "tests/transport/provider_params.h"
#include "trainer/pserver_client.h"
#include "trainer/pserver_connection.h"

namespace fabps::trainer {
namespace {

namespace ps = rpc::pserver;
using testing::ClientOptions;
using testing::Elements;
using testing::InitAll;
using testing::kMs;
using testing::PServerCluster;
using testing::Specs;

// The deadline of one try of Retried.
constexpr int64_t kTryMs = 10000;

// A client that initialized Specs() with SGD at lr 1, "one" with a linear
// decay schedule.
Result<std::unique_ptr<PServerClient>> Init(const PServerCluster& cluster,
                                            const std::string& provider) {
  PServerClientOptions o = ClientOptions(cluster, provider);
  UpdateRuleConfig decay = o.default_rule;
  decay.schedule = LrSchedule::kLinearDecay;
  decay.final_learning_rate = 0.5;
  decay.decay_steps = 10;
  o.rules["one"] = decay;
  FABPS_ASSIGN_OR_RETURN(auto c, PServerClient::Connect(o));
  FABPS_ASSIGN_OR_RETURN(bool mine, c->BeginInitParams(true));
  if (!mine) return Status::FailedPrecondition("lost the init election");
  FABPS_RETURN_IF_ERROR(InitAll(c.get()));
  return c;
}

class LearningRateTest : public transport::testing::ProviderTest {
 protected:
  // Starts `n` pservers and a client that initialized them (Init).
  void StartAndInit(int n) {
    cluster_ = std::make_unique<PServerCluster>(GetParam(), n);
    ASSERT_TRUE(cluster_->StartAll().ok());
    auto c = Init(*cluster_, GetParam());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
  }

  std::unique_ptr<PServerCluster> cluster_;
  std::unique_ptr<PServerClient> client_;
};

// Runs `call` until it succeeds, five times at most: the first call after
// a pserver restart may meet the old connection (the next reconnects).
template <class Fn>
Status Retried(Fn&& call) {
  Status s;
  for (int attempt = 0; attempt < 5; attempt++) {
    s = call();
    if (s.ok()) break;
  }
  return s;
}

// Pushes `grad` to every element of "many" and returns how much each
// element went down.
std::vector<float> DropOfOnePush(PServerClient* c, float grad) {
  const size_t n = Elements(Specs()[2]);
  std::vector<float> before(n), after(n), g(n, grad);
  Status s = Retried([&] {
    return c->GetParams({{"many", before.data(), n * 4}},
                        Deadline::InMs(kTryMs));
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  s = Retried([&] {
    auto h = c->SendGrads({{"many", g.data(), n * 4}}, Deadline::InMs(kTryMs));
    return h.ok() ? c->Wait(*h, Deadline::InMs(kTryMs)) : h.status();
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  s = Retried([&] {
    return c->GetParams({{"many", after.data(), n * 4}},
                        Deadline::InMs(kTryMs));
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::vector<float> drop(n);
  for (size_t i = 0; i < n; i++) drop[i] = before[i] - after[i];
  return drop;
}

void ExpectEveryDrop(const std::vector<float>& drop, float want) {
  for (size_t i = 0; i < drop.size(); i++)
    ASSERT_EQ(drop[i], want) << "many[" << i << "]";
}

TEST_P(LearningRateTest, NewRateReachesEveryBlockOnEveryPserver) {
  ASSERT_NO_FATAL_FAILURE(StartAndInit(2));
  ExpectEveryDrop(DropOfOnePush(client_.get(), 2.0f), 2.0f);
  ASSERT_TRUE(
      client_->SetLearningRates({{"many", 0.25}}, Deadline::InMs(kMs)).ok());
  ExpectEveryDrop(DropOfOnePush(client_.get(), 2.0f), 0.5f);
  auto rules = client_->Rules(Deadline::InMs(kMs));
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  EXPECT_EQ(rules->at("many").learning_rate, 0.25);
  EXPECT_EQ(rules->at("block").learning_rate, 1.0);
  EXPECT_EQ(rules->at("one").schedule, LrSchedule::kLinearDecay);
  // A second trainer sees the rate the pservers apply.
  auto other = PServerClient::Connect(ClientOptions(*cluster_, GetParam()));
  ASSERT_TRUE(other.ok());
  auto seen = (*other)->Rules(Deadline::InMs(kMs));
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  EXPECT_EQ(seen->at("many").learning_rate, 0.25);
}

TEST_P(LearningRateTest, ClientRefusesBadRatesAndNamesBeforeSending) {
  ASSERT_NO_FATAL_FAILURE(StartAndInit(2));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double bad : {nan, -0.5, std::numeric_limits<double>::infinity()}) {
    Status s = client_->SetLearningRates({{"block", 0.5}, {"many", bad}},
                                         Deadline::InMs(kMs));
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("'many'"), std::string::npos) << s.ToString();
  }
  Status s = client_->SetLearningRates({{"nope", 0.5}}, Deadline::InMs(kMs));
  EXPECT_EQ(s.code(), Status::Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("'nope'"), std::string::npos) << s.ToString();
  s = client_->SetLearningRates({{"one", 0.5}}, Deadline::InMs(kMs));
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("linear_decay"), std::string::npos)
      << s.ToString();
  // Nothing of the refused calls was applied: "block" keeps lr 1.
  auto rules = client_->Rules(Deadline::InMs(kMs));
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ(rules->at("block").learning_rate, 1.0);
  EXPECT_EQ(rules->at("many").learning_rate, 1.0);
}

TEST_P(LearningRateTest, PserverRefusesBadRatesAllOrNothing) {
  ASSERT_NO_FATAL_FAILURE(StartAndInit(1));
  auto conn = PServerConnection::Open(0, cluster_->addresses()[0], 10000);
  ASSERT_TRUE(conn.ok());
  auto set = [&](const std::map<std::string, double>& rates) {
    return (*conn)->Call("SetLearningRates", [&](ps::PServerClient& pc) {
      pc.SetLearningRates(7, rates);
    });
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    std::map<std::string, double> rates;
    Status::Code code;
    std::string names;
  };
  for (const Case& k : std::vector<Case>{
           {{{"block", 0.5}, {"many", nan}},
            Status::Code::kInvalidArgument,
            "'many'"},
           {{{"block", 0.5}, {"many", -1.0}},
            Status::Code::kInvalidArgument,
            "'many'"},
           {{{"block", 0.5}, {"zzz", 0.5}}, Status::Code::kNotFound, "'zzz'"},
           {{{"block", 0.5}, {"one", 0.5}},
            Status::Code::kFailedPrecondition,
            "'one'"}}) {
    Status s = set(k.rates);
    EXPECT_EQ(s.code(), k.code) << s.ToString();
    EXPECT_NE(s.message().find(k.names), std::string::npos) << s.ToString();
  }
  ps::InitConfig config;
  ASSERT_TRUE(
      (*conn)
          ->Call("GetInitConfig",
                 [&](ps::PServerClient& pc) { pc.GetInitConfig(config); })
          .ok());
  EXPECT_EQ(config.rules.count("block"), 0u) << "a refused call changed it";
  ASSERT_TRUE(set({{"block", 0.5}}).ok());
  ASSERT_TRUE(
      (*conn)
          ->Call("GetInitConfig",
                 [&](ps::PServerClient& pc) { pc.GetInitConfig(config); })
          .ok());
  EXPECT_EQ(config.rules.at("block").learning_rate, 0.5);
  EXPECT_EQ(config.rules.at("block").kind, config.default_rule.kind);
}

TEST_P(LearningRateTest, RestartedPserverAppliesTheLatestRate) {
  ASSERT_NO_FATAL_FAILURE(StartAndInit(2));
  ASSERT_TRUE(
      client_->SetLearningRates({{"many", 0.5}}, Deadline::InMs(kMs)).ok());
  ASSERT_TRUE(
      client_->SetLearningRates({{"many", 0.25}}, Deadline::InMs(kMs)).ok());
  // kill -9 both: each comes back from the checkpoint it wrote at init and
  // the InitConfig it rewrote with the rate.
  for (int i = 0; i < 2; i++) {
    cluster_->proc(i).Kill();
    ASSERT_TRUE(cluster_->Start(i).ok());
  }
  ExpectEveryDrop(DropOfOnePush(client_.get(), 2.0f), 0.5f);
  auto rules = client_->Rules(Deadline::InMs(kMs));
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  EXPECT_EQ(rules->at("many").learning_rate, 0.25);
}

FABPS_INSTANTIATE_TCP_AND_SHM(LearningRateTest);

}  // namespace
}  // namespace fabps::trainer
