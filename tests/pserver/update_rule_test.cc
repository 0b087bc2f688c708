// Each update rule, through a Shard, against the plain reference in
// reference_rules.h, step by step.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>

#include "pserver/shard.h"
#include "pserver/update_kernels.h"
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

enum class Variant {
  kPlain,
  kWeightDecay,
  kClipValue,
  kClipNorm,
  kLinearDecay,
  kAll
};

const char* VariantName(Variant v) {
  switch (v) {
    case Variant::kPlain:
      return "plain";
    case Variant::kWeightDecay:
      return "wd";
    case Variant::kClipValue:
      return "clipvalue";
    case Variant::kClipNorm:
      return "clipnorm";
    case Variant::kLinearDecay:
      return "lineardecay";
    case Variant::kAll:
      return "all";
  }
  return "?";
}

UpdateRuleConfig MakeConfig(RuleKind kind, Variant v) {
  UpdateRuleConfig c;
  c.kind = kind;
  c.learning_rate = kind == RuleKind::kSgd ? 0.1 : 0.01;
  c.momentum = 0.8;
  c.adagrad_initial = 0.1;
  if (v == Variant::kWeightDecay || v == Variant::kAll) c.weight_decay = 0.05;
  if (v == Variant::kClipValue || v == Variant::kAll) c.clip_value = 0.5;
  // Gradients are in [-1, 1): the norm of ~1000 of them is ~18, so this
  // clips every step.
  if (v == Variant::kClipNorm || v == Variant::kAll) c.clip_norm = 3.0;
  if (v == Variant::kLinearDecay || v == Variant::kAll) {
    c.schedule = LrSchedule::kLinearDecay;
    c.final_learning_rate = c.learning_rate / 10;
    c.decay_steps = 6;
  }
  return c;
}

// (rule, variant, dtype, elements, grain): grain below elements/2 takes the
// parallel_for path.
using Param = std::tuple<RuleKind, Variant, DType, uint64_t, uint64_t>;

class RuleVsReference : public ::testing::TestWithParam<Param> {};

TEST_P(RuleVsReference, MatchesStepByStep) {
  auto [kind, variant, dtype, n, grain] = GetParam();
  UpdateRuleConfig c = MakeConfig(kind, variant);
  ShardOptions o;
  o.default_rule = c;
  o.parallel_grain_elements = grain;
  o.num_threads = 2;
  auto shard = OneParamShard(dtype, {n}, o);
  ASSERT_NE(shard, nullptr);
  std::mt19937_64 rng(42 + n);
  std::vector<double> w0 = Rounded(dtype, RandomVector(rng, n, -1, 1));
  std::string init = ToBytes(dtype, w0);
  ASSERT_TRUE(shard->InitBlock(0, init.data(), init.size()).ok());
  ReferenceRule ref(c, w0);
  const double tol = dtype == DType::kFloat32 ? 2e-5 : 1e-12;
  for (int step = 1; step <= 8; ++step) {
    std::vector<double> g = Rounded(dtype, RandomVector(rng, n, -1, 1));
    AlignedBytes bytes(ToBytes(dtype, g));
    GradientRef ref_g;
    ref_g.block = 0;
    ref_g.data = bytes.data();
    ref_g.bytes = bytes.size();
    ASSERT_TRUE(shard->Apply(ref_g, Deadline::InMs(10000)).ok());
    ref.Step(g);
    std::vector<double> got = ValuesOf(*shard, 0);
    double worst = 0;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; ++i) {
      double err =
          std::abs(got[i] - ref.w()[i]) / std::max(1.0, std::abs(ref.w()[i]));
      if (err > worst) worst = err, worst_i = i;
    }
    ASSERT_LE(worst, tol) << "step " << step << " element " << worst_i
                          << " got " << got[worst_i] << " want "
                          << ref.w()[worst_i];
    EXPECT_EQ(shard->UpdateCount(0).value(), static_cast<uint64_t>(step));
  }
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  auto [kind, variant, dtype, n, grain] = info.param;
  return std::string(RuleName(kind)) + "_" + VariantName(variant) + "_" +
         DTypeName(dtype) + (grain < n ? "_split" : "");
}

INSTANTIATE_TEST_SUITE_P(
    AllRules, RuleVsReference,
    ::testing::Combine(::testing::Values(RuleKind::kSgd, RuleKind::kMomentum,
                                         RuleKind::kNesterov, RuleKind::kAdam,
                                         RuleKind::kAdaGrad),
                       ::testing::Values(Variant::kPlain, Variant::kWeightDecay,
                                         Variant::kClipValue,
                                         Variant::kClipNorm,
                                         Variant::kLinearDecay, Variant::kAll),
                       ::testing::Values(DType::kFloat32, DType::kFloat64),
                       ::testing::Values(uint64_t{1000}),
                       ::testing::Values(uint64_t{1} << 20)),
    ParamName);

// A large block split by parallel_for: same results as the reference,
// clip by norm included (its partial sums are combined in a fixed order).
INSTANTIATE_TEST_SUITE_P(
    LargeBlocks, RuleVsReference,
    ::testing::Combine(::testing::Values(RuleKind::kSgd, RuleKind::kAdam),
                       ::testing::Values(Variant::kPlain, Variant::kAll),
                       ::testing::Values(DType::kFloat32),
                       ::testing::Values(uint64_t{40000}),
                       ::testing::Values(uint64_t{4096})),
    ParamName);

TEST(Sgd, IntegerValuedInputsAreExact) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (double lr : {1.0, 0.5, 2.0}) {
      ShardOptions o;
      o.default_rule.kind = RuleKind::kSgd;
      o.default_rule.learning_rate = lr;
      const uint64_t n = 5000;
      auto shard = OneParamShard(dtype, {n}, o, /*block_elements=*/1 << 20);
      ASSERT_NE(shard, nullptr);
      std::mt19937_64 rng(7);
      std::uniform_int_distribution<int> wd(-1000, 1000), gd(-100, 100);
      std::vector<double> w(n);
      for (double& x : w) x = wd(rng);
      std::string init = ToBytes(dtype, w);
      ASSERT_TRUE(shard->InitBlock(0, init.data(), init.size()).ok());
      for (int step = 0; step < 20; ++step) {
        std::vector<double> g(n);
        for (double& x : g) x = gd(rng);
        AlignedBytes bytes(ToBytes(dtype, g));
        GradientRef gr;
        gr.data = bytes.data();
        gr.bytes = bytes.size();
        ASSERT_TRUE(shard->Apply(gr, Deadline::InMs(10000)).ok());
        for (size_t i = 0; i < n; ++i) w[i] -= lr * g[i];
      }
      EXPECT_EQ(ValuesOf(*shard, 0), w) << DTypeName(dtype) << " lr " << lr;
    }
  }
}

TEST(RuleConfig, ValidationNamesTheField) {
  UpdateRuleConfig c;
  EXPECT_TRUE(ValidateRuleConfig(c).ok());
  c.learning_rate = -1;
  Status s = ValidateRuleConfig(c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("learning_rate"), std::string::npos);
  c = UpdateRuleConfig();
  c.kind = RuleKind::kAdam;
  c.beta2 = 1.0;
  EXPECT_FALSE(ValidateRuleConfig(c).ok());
  c = UpdateRuleConfig();
  c.schedule = LrSchedule::kLinearDecay;
  c.decay_steps = 0;
  EXPECT_FALSE(ValidateRuleConfig(c).ok());
  c = UpdateRuleConfig();
  c.clip_norm = std::nan("");
  EXPECT_FALSE(ValidateRuleConfig(c).ok());
  c = UpdateRuleConfig();
  c.kind = static_cast<RuleKind>(17);
  EXPECT_FALSE(ValidateRuleConfig(c).ok());
}

TEST(RuleConfig, LinearDecaySchedule) {
  UpdateRuleConfig c;
  c.learning_rate = 1.0;
  c.schedule = LrSchedule::kLinearDecay;
  c.final_learning_rate = 0.0;
  c.decay_steps = 5;
  EXPECT_DOUBLE_EQ(LearningRateAt(c, 1), 1.0);
  EXPECT_DOUBLE_EQ(LearningRateAt(c, 3), 0.5);
  EXPECT_DOUBLE_EQ(LearningRateAt(c, 5), 0.0);
  EXPECT_DOUBLE_EQ(LearningRateAt(c, 500), 0.0);
}

TEST(RuleConfig, PerParameterRules) {
  auto layout = Layout::Build(
      {{"a", DType::kFloat32, {4}}, {"b", DType::kFloat32, {4}}}, 1 << 20, 1);
  ASSERT_TRUE(layout.ok());
  ShardOptions o;
  o.default_rule.learning_rate = 1.0;
  UpdateRuleConfig b_rule;
  b_rule.learning_rate = 2.0;
  o.rules["b"] = b_rule;
  auto shard = Shard::Create(*layout, o);
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  alignas(8) float g[4] = {1, 1, 1, 1};
  for (uint32_t block : {0u, 1u}) {
    GradientRef gr;
    gr.block = block;
    gr.data = g;
    gr.bytes = sizeof(g);
    ASSERT_TRUE((*shard)->Apply(gr, Deadline::InMs(10000)).ok());
  }
  EXPECT_EQ(ValuesOf(**shard, 0), std::vector<double>(4, -1.0));
  EXPECT_EQ(ValuesOf(**shard, 1), std::vector<double>(4, -2.0));
  o.rules["nope"] = b_rule;
  EXPECT_FALSE(Shard::Create(*layout, o).ok());
}

}  // namespace
}  // namespace fabps::pserver
