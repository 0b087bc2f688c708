// fabps-doctor as a person runs it: real binary, real providers.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "tests/util/subprocess.h"

namespace fabps {
namespace {

using testing::Subprocess;
using testing::TempDir;

TEST(Doctor, ReportsProvidersDevicesAndAutoChoice) {
  TempDir dir;
  auto p = Subprocess::Start(
      {testing::BuiltBinary("cmd/doctor/fabps-doctor"), "-p", "tcp;ofi_rxm"},
      dir.File("out"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto st = p->Wait(60000);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  std::string out = testing::ReadFileOrEmpty(dir.File("out"));
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << out;
  EXPECT_NE(out.find("tcp;ofi_rxm    works"), std::string::npos) << out;
  EXPECT_NE(out.find("RDMA devices"), std::string::npos) << out;
  EXPECT_NE(out.find("auto picks: "), std::string::npos) << out;
  EXPECT_NE(out.find("loopback RMA write+read through tcp;ofi_rxm: OK"),
            std::string::npos)
      << out;
}

TEST(Doctor, UnknownProviderFailsClearly) {
  TempDir dir;
  auto p = Subprocess::Start(
      {testing::BuiltBinary("cmd/doctor/fabps-doctor"), "-p", "bogus"},
      dir.File("out"));
  ASSERT_TRUE(p.ok());
  auto st = p->Wait(60000);
  ASSERT_TRUE(st.ok());
  std::string out = testing::ReadFileOrEmpty(dir.File("out"));
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 1) << out;
  EXPECT_NE(out.find("providers that work"), std::string::npos) << out;
}

}  // namespace
}  // namespace fabps
