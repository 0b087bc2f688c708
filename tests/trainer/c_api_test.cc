// Runs the C program c_api_prog (built from C, linking only the trainer
// library through fabps_c.h) against a real master.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "tests/master/master_process.h"
#include "tests/master/test_dataset.h"

namespace fabps {
namespace {

TEST(CApi, ReadsPassesThroughTheCInterface) {
  testing::TempDir dir;
  std::string glob = testing::MakeDataset(dir.path(), 2, 3, 7);  // 42 records
  auto m = testing::MasterProcess::Start(
      dir.File("state"), dir.File("master.log"), {"--chunks-per-task", "2"});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto p = testing::Subprocess::Start(
      {testing::BuiltBinary("tests/trainer/c_api_prog"), m->address(), glob,
       dir.File("other*"), "2"},
      dir.File("prog.log"));
  ASSERT_TRUE(p.ok());
  auto st = p->Wait(60'000);
  ASSERT_TRUE(st.ok());
  std::string out = testing::ReadFileOrEmpty(dir.File("prog.log"));
  ASSERT_TRUE(WIFEXITED(*st)) << out;
  EXPECT_EQ(WEXITSTATUS(*st), 0) << out;
  EXPECT_NE(out.find("refused: FailedPrecondition"), std::string::npos) << out;
  size_t first = out.find("records=42 ");
  ASSERT_NE(first, std::string::npos) << out;
  EXPECT_NE(out.find("records=42 ", first + 1), std::string::npos) << out;
  EXPECT_NE(out.find("save_model=1"), std::string::npos) << out;
}

}  // namespace
}  // namespace fabps
