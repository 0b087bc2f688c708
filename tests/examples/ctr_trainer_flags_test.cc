// fabps-ctr-trainer's command line: a bad value, or a flag of the other
// table (--table hashed or fixed), ends it with exit code 2 and one line
// naming the flag, before it connects anywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"

namespace fabps::testing {
namespace {

TEST(CtrTrainerFlagsTest, BadFlagsGiveOneLineNamingTheFlag) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  std::vector<Case> cases = {
      {{"--table", "sparse"}, "--table"},
      {{"--mode", "sync", "--table", "hashed"}, "--table"},
      {{"--buckets", "0"}, "--buckets"},
      {{"--buckets", "65537"}, "--buckets"},
      {{"--admit-after", "0"}, "--admit-after"},
      {{"--admit-after", "256"}, "--admit-after"},
      {{"--ttl-seconds", "-1"}, "--ttl-seconds"},
      {{"--table-budget-mb", "-5"}, "--table-budget-mb"},
      {{"--table-init", "gaussian"}, "--table-init"},
      {{"--table-init-scale", "-0.1"}, "--table-init-scale"},
      {{"--table-rows", "1000"}, "--table-rows"},  // the default is hashed
      {{"--table", "fixed", "--buckets", "8"}, "--buckets"},
      {{"--table", "fixed", "--ttl-seconds", "60"}, "--ttl-seconds"},
      {{"--mode", "sync", "--admit-after", "2"}, "--admit-after"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {
        BuiltBinary("examples/ctr/fabps-ctr-trainer"),
        "--dataset",
        "/nonexistent/*",
        "--pservers",
        "127.0.0.1:1",
        "--master",
        "127.0.0.1:1"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto run = RunToExit(argv, dir.File("flags.log"), 20'000);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_EQ(run->code, 2) << c.expect;
    const std::string& out = run->output;
    EXPECT_NE(out.find("fabps-ctr-trainer: " + c.expect + ":"),
              std::string::npos)
        << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  }
}

}  // namespace
}  // namespace fabps::testing
