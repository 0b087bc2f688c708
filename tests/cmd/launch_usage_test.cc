// tools/run.sh checks its arguments before it installs or builds anything,
// against cmd/launch/usage.txt (the launcher's --help kept in the source
// tree): that file must be what the built launcher prints, and a flag the
// launcher does not know must stop run.sh with the usage and a non-zero
// exit code before any build.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"

namespace fabps {
namespace {

using testing::TempDir;

const std::string kUsageFile =
    std::string(FABPS_SOURCE_DIR) + "/cmd/launch/usage.txt";

// Runs `argv` with its output in dir/out; returns the wait status, -1 on
// failure to start or finish.
int RunAndWait(const TempDir& dir, const std::vector<std::string>& argv,
               const std::vector<std::string>& env = {}) {
  auto p = testing::Subprocess::Start(argv, dir.File("out"), env);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return -1;
  auto st = p->Wait(60000);
  EXPECT_TRUE(st.ok()) << "still running after 60 s";
  return st.ok() ? *st : -1;
}

TEST(LaunchUsage, UsageFileIsWhatTheLauncherPrints) {
  TempDir dir;
  int st = RunAndWait(
      dir, {testing::BuiltBinary("cmd/launch/fabps-launch"), "--help"});
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  std::string help = testing::ReadFileOrEmpty(dir.File("out"));
  ASSERT_FALSE(help.empty());
  EXPECT_EQ(testing::ReadFileOrEmpty(kUsageFile), help)
      << "cmd/launch/usage.txt is stale; after changing the launcher's "
         "flags run: build/cmd/launch/fabps-launch --help > "
         "cmd/launch/usage.txt";
}

// --model ctr's table flags go with one table: a refused combination is
// one line naming the flag, exit code 2, before anything starts.
TEST(LaunchUsage, CtrTableFlagsOfTheOtherTableAreRefused) {
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {{"--mode", "sync", "--table", "hashed"}, "--table: "},
           {{"--table-rows", "262144"}, "--table-rows: "},
           {{"--table", "fixed", "--admit-after", "2"}, "--admit-after: "},
           {{"--mode", "sync", "--ttl-seconds", "60"}, "--ttl-seconds: "}}) {
    TempDir dir;
    std::vector<std::string> argv = {
        testing::BuiltBinary("cmd/launch/fabps-launch"), "--model", "ctr",
        "--run-dir", dir.File("run")};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    int st = RunAndWait(dir, argv);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 2) << c.expect;
    std::string out = testing::ReadFileOrEmpty(dir.File("out"));
    EXPECT_EQ(out.find("fabps-launch: " + c.expect), 0u) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    struct stat s;
    EXPECT_NE(::stat(dir.File("run").c_str(), &s), 0) << "a job started";
  }
}

TEST(LaunchUsage, RunShRefusesAnUnknownFlagBeforeBuilding) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--no-such-flag"},
        std::vector<std::string>{"--passes", "2", "--no-such-flag=3"},
        std::vector<std::string>{"--tls", "stray"}}) {
    TempDir dir;
    std::vector<std::string> argv = {std::string(FABPS_SOURCE_DIR) +
                                     "/tools/run.sh"};
    argv.insert(argv.end(), args.begin(), args.end());
    // A build directory that must not come into being.
    std::string build = dir.File("build");
    int st = RunAndWait(dir, argv, {"FABPS_BUILD_DIR=" + build});
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 2) << args.back();
    std::string out = testing::ReadFileOrEmpty(dir.File("out"));
    EXPECT_NE(out.find("'" + args.back() + "' is not a flag of fabps-launch"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("Usage: fabps-launch [OPTIONS]"), std::string::npos)
        << out;
    EXPECT_EQ(out.find("setup:"), std::string::npos) << out;
    struct stat s;
    EXPECT_NE(::stat(build.c_str(), &s), 0) << "run.sh configured a build";
  }
}

TEST(LaunchUsage, RunShHelpPrintsTheUsageWithoutBuilding) {
  TempDir dir;
  std::string build = dir.File("build");
  int st = RunAndWait(
      dir, {std::string(FABPS_SOURCE_DIR) + "/tools/run.sh", "--help"},
      {"FABPS_BUILD_DIR=" + build});
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  EXPECT_EQ(testing::ReadFileOrEmpty(dir.File("out")),
            testing::ReadFileOrEmpty(kUsageFile));
  struct stat s;
  EXPECT_NE(::stat(build.c_str(), &s), 0) << "run.sh configured a build";
}

}  // namespace
}  // namespace fabps
