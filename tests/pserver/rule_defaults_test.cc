// The UpdateRule defaults declared in thrift/pserver.thrift are the C++
// library's (protocol::UpdateRuleConfig, which the C API documents): a
// client in any language that leaves a field out gets the same rule.
#include <gtest/gtest.h>

#include "pserver/rpc/init_config.h"

namespace fabps::pserver {
namespace {

TEST(RuleDefaults, IdlDefaultsAreTheLibrarysDefaults) {
  rpc::pserver::UpdateRule idl;  // every field at its IDL default
  UpdateRuleConfig lib;
  EXPECT_EQ(idl, RuleToThrift(lib));
  EXPECT_DOUBLE_EQ(idl.momentum, 0.9);
  // A rule read from a peer that sent nothing but its kind.
  idl.kind = static_cast<int32_t>(RuleKind::kMomentum);
  auto read = RuleFromThrift(idl);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->kind, RuleKind::kMomentum);
  EXPECT_EQ(read->momentum, lib.momentum);
  EXPECT_EQ(read->learning_rate, lib.learning_rate);
  EXPECT_EQ(read->beta1, lib.beta1);
  EXPECT_EQ(read->beta2, lib.beta2);
  EXPECT_EQ(read->epsilon, lib.epsilon);
}

}  // namespace
}  // namespace fabps::pserver
