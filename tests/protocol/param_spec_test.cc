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
  EXPECT_FALSE(
      CheckParamSpec({"w", DType::kFloat32, {1, 1, 1, 1, 1, 1, 1, 1, 1}}).ok());
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

TEST(ParamSpec, HashedTableCountsOneRow) {
  ParamSpec e = HashedSpec("emb", DType::kFloat64, {4, 3}, 16);
  EXPECT_EQ(e.kind, ParamKind::kHashed);
  EXPECT_TRUE(IsHashed(e));
  EXPECT_EQ(e.buckets, 16u);
  EXPECT_EQ(ElementCount(e), 12u);
  EXPECT_EQ(RowElements(e), 12u);  // the whole row shape, not 3
  EXPECT_EQ(ByteCount(e), 0u);     // no dense values
  EXPECT_TRUE(TakesRows(e));
  // Rank 1: a dense vector's rows are single elements, a table's row is
  // the vector.
  ParamSpec v = HashedSpec("v", DType::kFloat32, {8});
  EXPECT_EQ(v.buckets, kDefaultBuckets);
  EXPECT_EQ(kDefaultBuckets, 64u);
  EXPECT_EQ(RowElements(v), 8u);
  EXPECT_EQ(ByteCount(v), 0u);
  EXPECT_TRUE(TakesRows(v));
  ParamSpec dense{"v", DType::kFloat32, {8}};
  EXPECT_FALSE(IsHashed(dense));
  EXPECT_EQ(RowElements(dense), 1u);
  EXPECT_EQ(ByteCount(dense), 32u);
  EXPECT_FALSE(TakesRows(dense));
  // The numbers are a wire contract.
  EXPECT_EQ(static_cast<uint32_t>(ParamKind::kDense), 0u);
  EXPECT_EQ(static_cast<uint32_t>(ParamKind::kHashed), 1u);
}

TEST(ParamSpec, ChecksHashedKindAndBuckets) {
  EXPECT_TRUE(CheckParamSpec(HashedSpec("e", DType::kFloat32, {8}, 1)).ok());
  EXPECT_TRUE(
      CheckParamSpec(HashedSpec("e", DType::kFloat32, {2, 4}, kMaxBuckets))
          .ok());
  auto refused = [](const ParamSpec& p, const std::string& part) {
    Status s = CheckParamSpec(p);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << part;
    EXPECT_NE(s.message().find(part), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("'" + p.name + "'"), std::string::npos)
        << s.ToString();
  };
  refused(HashedSpec("rank0", DType::kFloat32, {}, 8), "rank >= 1");
  refused(HashedSpec("none", DType::kFloat32, {8}, 0), "0 buckets");
  refused(HashedSpec("many", DType::kFloat32, {8}, kMaxBuckets + 1),
          "65537 buckets");
  ParamSpec dense{"d", DType::kFloat32, {8}};
  dense.buckets = 4;
  refused(dense, "a dense parameter has no buckets");
  ParamSpec odd{"k", DType::kFloat32, {8}};
  odd.kind = static_cast<ParamKind>(5);
  refused(odd, "unknown kind 5");
  odd.buckets = 8;
  refused(odd, "unknown kind 5");
  // A hashed table still needs a valid row shape and dtype.
  refused(HashedSpec("zero", DType::kFloat32, {4, 0}, 8), "empty");
  EXPECT_FALSE(
      CheckParamSpec(HashedSpec("t", static_cast<DType>(9), {4}, 8)).ok());
}

TEST(ParamSpec, HashedTableTakesNoBuffer) {
  ParamSpec e = HashedSpec("emb", DType::kFloat32, {4}, 8);
  char data[64];
  for (size_t bytes : {size_t{0}, size_t{16}, size_t{64}}) {
    Status s = CheckParamBuffer(e, data, bytes);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << bytes;
    EXPECT_NE(s.message().find("hashed table"), std::string::npos)
        << s.ToString();
    EXPECT_NE(s.message().find("'emb'"), std::string::npos) << s.ToString();
  }
  EXPECT_FALSE(CheckParamBuffer(e, nullptr, 0).ok());
  Status s = CheckParamBuffer(e, data, 16, "InitParam");
  EXPECT_EQ(
      s.message().rfind("InitParam: parameter 'emb' is a hashed table", 0), 0u)
      << s.ToString();
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
