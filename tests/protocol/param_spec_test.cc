// The arithmetic on a parameter both sides share (protocol/param_spec.h) and
// the rule names (protocol/rule_config.h).
#include "protocol/param_spec.h"

#include <gtest/gtest.h>

#include "protocol/rule_config.h"

namespace fabps::protocol {
namespace {

TEST(ParamSpec, CountsElementsBytesAndRows) {
  ParamSpec emb{"emb", DType::kFloat64, {10, 4, 2}};
  EXPECT_EQ(ElementCount(emb), 80u);
  EXPECT_EQ(ByteCount(emb), 640u);
  EXPECT_EQ(RowElements(emb), 8u);
  EXPECT_TRUE(TakesRows(emb));
  ParamSpec bias{"b", DType::kFloat32, {7}};
  EXPECT_EQ(RowElements(bias), 1u);
  EXPECT_FALSE(TakesRows(bias));
  ParamSpec scalar{"s", DType::kFloat32, {}};
  EXPECT_EQ(ElementCount(scalar), 1u);
  EXPECT_EQ(RowElements(scalar), 1u);
}

TEST(ParamSpec, RefusesShapesThatOverflowOrAreEmpty) {
  EXPECT_EQ(ElementCount({3, 0, 2}), 0u);
  EXPECT_EQ(ElementCount({uint64_t{1} << 40, uint64_t{1} << 9}), 0u);
  EXPECT_EQ(ElementCount({~uint64_t{0}, ~uint64_t{0}}), 0u);
  EXPECT_EQ(ElementCount({uint64_t{1} << 24, uint64_t{1} << 24}),
            kMaxParamElements);
  EXPECT_TRUE(CheckParamSpec({"w", DType::kFloat32, {2, 3}}).ok());
  EXPECT_FALSE(CheckParamSpec({"", DType::kFloat32, {2}}).ok());
  EXPECT_FALSE(CheckParamSpec({"w", static_cast<DType>(9), {2}}).ok());
  EXPECT_FALSE(CheckParamSpec({"w", DType::kFloat32, {1, 1, 1, 1, 1, 1, 1, 1, 1}}).ok());
  Status s = CheckParamSpec({"w", DType::kFloat32, {2, 0}});
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("'w'"), std::string::npos) << s.ToString();
}

TEST(ParamSpec, BufferMustHoldExactlyTheParameter) {
  ParamSpec w{"w", DType::kFloat32, {2, 3}};
  char data[32];
  EXPECT_TRUE(CheckParamBuffer(w, data, 24).ok());
  EXPECT_FALSE(CheckParamBuffer(w, data, 23).ok());
  EXPECT_FALSE(CheckParamBuffer(w, data, 25).ok());
  EXPECT_FALSE(CheckParamBuffer(w, nullptr, 24).ok());
  Status s = CheckParamBuffer(w, data, 20, "SendGrads");
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "SendGrads: parameter 'w' has 24 bytes, the buffer has 20");
}

TEST(RuleNames, EveryKindRoundTripsAndOthersAreRefused) {
  ASSERT_EQ(RuleNames().size(), 5u);
  for (const std::string& name : RuleNames()) {
    auto kind = RuleKindFromName(name);
    ASSERT_TRUE(kind.ok()) << name;
    EXPECT_EQ(RuleName(*kind), name);
  }
  EXPECT_EQ(RuleNames()[2], "nesterov");
  auto bad = RuleKindFromName("adamw");
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("adagrad"), std::string::npos);
}

}  // namespace
}  // namespace fabps::protocol
