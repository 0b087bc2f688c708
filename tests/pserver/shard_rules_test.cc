// Shard::SetLearningRates: a new rate reaches every owned block of its
// parameter in async and sync mode, refusals name the parameter and change
// nothing, and rates set while gradients are applied race with nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

#include "pserver/shard.h"
#include "tests/pserver/test_util.h"

namespace fabps::pserver {
namespace {

using testing::OneParamShard;
using testing::ValuesOf;

Deadline Soon() { return Deadline::InMs(10000); }

ShardOptions Options(ApplyMode mode) {
  ShardOptions o;
  o.mode = mode;
  o.default_rule.learning_rate = 1.0;
  o.num_threads = 2;
  return o;
}

GradientRef Dense(uint32_t block, const std::vector<double>& g, uint64_t step) {
  return GradientRef{block,    step,        0, GradientFormat::kDense,
                     g.data(), g.size() * 8};
}

class ShardRulesTest : public ::testing::TestWithParam<ApplyMode> {};

// Parameter "p" of 8 elements in blocks of 4: both blocks take the rate.
TEST_P(ShardRulesTest, NewRateReachesEveryBlock) {
  auto shard = OneParamShard(DType::kFloat64, {8}, Options(GetParam()), 4);
  ASSERT_NE(shard, nullptr);
  std::vector<double> g(4, 2.0);
  for (uint32_t b = 0; b < 2; b++)
    ASSERT_TRUE(shard->Apply(Dense(b, g, 0), Soon()).ok());
  ASSERT_TRUE(shard->SetLearningRates({{"p", 0.25}}).ok());
  EXPECT_EQ(shard->RuleOf(0).learning_rate, 0.25);
  EXPECT_EQ(shard->options().default_rule.learning_rate, 1.0);
  for (uint32_t b = 0; b < 2; b++) {
    ASSERT_TRUE(shard->Apply(Dense(b, g, 1), Soon()).ok());
    EXPECT_EQ(ValuesOf(*shard, b), std::vector<double>(4, -2.5)) << b;
  }
}

TEST_P(ShardRulesTest, RefusalsNameTheParameterAndChangeNothing) {
  auto layout = Layout::Build(
      {{"p", DType::kFloat64, {8}}, {"decay", DType::kFloat64, {4}}}, 4, 1);
  ASSERT_TRUE(layout.ok());
  ShardOptions o = Options(GetParam());
  UpdateRuleConfig decay = o.default_rule;
  decay.schedule = LrSchedule::kLinearDecay;
  decay.decay_steps = 10;
  o.rules["decay"] = decay;
  auto shard = Shard::Create(std::move(layout).value(), o);
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    std::map<std::string, double> rates;
    Status::Code code;
    const char* names;
  };
  for (const Case& k : std::vector<Case>{
           {{{"p", nan}}, Status::Code::kInvalidArgument, "'p'"},
           {{{"p", -1.0}}, Status::Code::kInvalidArgument, "'p'"},
           {{{"p", std::numeric_limits<double>::infinity()}},
            Status::Code::kInvalidArgument,
            "'p'"},
           {{{"p", 0.5}, {"nope", 0.5}}, Status::Code::kNotFound, "'nope'"},
           {{{"p", 0.5}, {"decay", 0.5}},
            Status::Code::kFailedPrecondition,
            "'decay'"}}) {
    Status s = (*shard)->SetLearningRates(k.rates);
    EXPECT_EQ(s.code(), k.code) << s.ToString();
    EXPECT_NE(s.ToString().find(k.names), std::string::npos) << s.ToString();
    EXPECT_EQ((*shard)->RuleOf(0).learning_rate, 1.0) << s.ToString();
  }
}

// Rates set while another thread applies (TSan watches the rule).
TEST_P(ShardRulesTest, RatesSetWhileApplying) {
  auto shard = OneParamShard(DType::kFloat64, {8}, Options(GetParam()), 4);
  ASSERT_NE(shard, nullptr);
  std::vector<double> g(4, 1.0);
  std::thread setter([&] {
    for (int i = 0; i < 200; i++)
      ASSERT_TRUE(shard->SetLearningRates({{"p", 1.0}}).ok());
  });
  for (uint64_t step = 0; step < 200; step++) {
    for (uint32_t b = 0; b < 2; b++)
      ASSERT_TRUE(shard->Apply(Dense(b, g, step), Soon()).ok());
  }
  setter.join();
  for (uint32_t b = 0; b < 2; b++)
    EXPECT_EQ(ValuesOf(*shard, b), std::vector<double>(4, -200.0));
}

INSTANTIATE_TEST_SUITE_P(Modes, ShardRulesTest,
                         ::testing::Values(ApplyMode::kAsync, ApplyMode::kSync),
                         [](const ::testing::TestParamInfo<ApplyMode>& i) {
                           return std::string(
                               i.param == ApplyMode::kSync ? "sync" : "async");
                         });

}  // namespace
}  // namespace fabps::pserver
