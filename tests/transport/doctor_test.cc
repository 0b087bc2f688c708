// fabps-doctor as a person runs it: real binary, real providers.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/util/subprocess.h"

namespace fabps {
namespace {

using testing::TempDir;

TEST(Doctor, ReportsProvidersDevicesAndAutoChoice) {
  TempDir dir;
  auto run = testing::RunToExit(
      {testing::BuiltBinary("cmd/doctor/fabps-doctor"), "-p", "tcp;ofi_rxm"},
      dir.File("out"), 60000);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const std::string& out = run->output;
  EXPECT_EQ(run->code, 0) << out;
  EXPECT_NE(out.find("tcp;ofi_rxm    works"), std::string::npos) << out;
  EXPECT_NE(out.find("RDMA devices"), std::string::npos) << out;
  EXPECT_NE(out.find("auto picks: "), std::string::npos) << out;
  EXPECT_NE(out.find("loopback RMA write+read through tcp;ofi_rxm: OK"),
            std::string::npos)
      << out;
}

TEST(Doctor, UnknownProviderFailsClearly) {
  TempDir dir;
  auto run = testing::RunToExit(
      {testing::BuiltBinary("cmd/doctor/fabps-doctor"), "-p", "bogus"},
      dir.File("out"), 60000);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const std::string& out = run->output;
  EXPECT_EQ(run->code, 1) << out;
  EXPECT_NE(out.find("providers that work"), std::string::npos) << out;
}

// The locked-memory limit verbs registrations need: a low one (64 KiB,
// set with prlimit for the doctor only) is shown and the advice given; an
// unlimited one (where the hard limit allows it) is shown without it.
TEST(Doctor, ReportsTheLockedMemoryLimit) {
  if (::access("/usr/bin/prlimit", X_OK) != 0)
    GTEST_SKIP() << "/usr/bin/prlimit missing (util-linux)";
  struct Case {
    std::string limit, shows;
    bool advice;
  };
  std::vector<Case> cases = {{"65536:65536", "soft 64 KiB, hard 64 KiB", true}};
  // Raising a limit needs CAP_SYS_RESOURCE unless the hard one allows it.
  rlimit now{};
  if (::getrlimit(RLIMIT_MEMLOCK, &now) == 0 && now.rlim_max == RLIM_INFINITY)
    cases.push_back(
        {"unlimited:unlimited", "soft unlimited, hard unlimited", false});
  for (const Case& c : cases) {
    TempDir dir;
    auto run =
        testing::RunToExit({"/usr/bin/prlimit", "--memlock=" + c.limit,
                            testing::BuiltBinary("cmd/doctor/fabps-doctor")},
                           dir.File("out"), 60000);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    const std::string& out = run->output;
    EXPECT_EQ(run->code, 0) << out;
    EXPECT_NE(out.find("Locked memory (ulimit -l, what verbs may register):\n"
                       "  " +
                       c.shows + "\n"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("ulimit -l unlimited") != std::string::npos, c.advice)
        << out;
  }
}

}  // namespace
}  // namespace fabps
