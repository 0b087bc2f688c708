// Runs the C program c_pserver_prog (built from C, linking only the trainer
// library through fabps_c.h) against two real fabps-pserver processes, over
// tcp;ofi_rxm and over shm.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>

#include "tests/trainer/pserver_cluster.h"
#include "tests/transport/provider_params.h"
#include "transport/fabric.h"

namespace fabps {
namespace {

using testing::PServerCluster;

class CPServerTest : public transport::testing::ProviderTest {};

TEST_P(CPServerTest, ProgramPushesAndPullsExactly) {
  PServerCluster cluster(GetParam(), 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  std::string addrs;
  for (const auto& a : cluster.addresses()) {
    addrs += (addrs.empty() ? "" : ",") + a;
  }
  std::string iface = "127.0.0.1";  // shm ignores it
  std::string save_dir = cluster.dir().File("saved");
  std::string log = cluster.dir().File("prog.log");
  auto p = testing::Subprocess::Start(
      {testing::BuiltBinary("tests/trainer/c_pserver_prog"), addrs, GetParam(),
       iface, save_dir},
      log);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto st = p->Wait(120'000);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  std::string out = testing::ReadFileOrEmpty(log);
  ASSERT_TRUE(WIFEXITED(*st)) << out;
  EXPECT_EQ(WEXITSTATUS(*st), 0) << out;
  EXPECT_NE(out.find("c_pserver_prog: OK"), std::string::npos) << out;
  EXPECT_NE(out.find("second trainer: values exact after 3 pushes"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("third trainer: values exact after 3 pushes"),
            std::string::npos)
      << out;
  // Error paths gave messages, e.g. the unknown name.
  EXPECT_NE(out.find("refused as expected"), std::string::npos) << out;
  EXPECT_NE(out.find("rows exact after a rows push"), std::string::npos) << out;
  EXPECT_NE(out.find("c.nope"), std::string::npos) << out;
  // Both pservers wrote a checkpoint into the directory.
  size_t entries = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(save_dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    entries++;
  }
  EXPECT_GE(entries, 2u) << "in " << save_dir;
  // The pservers survived the trainer leaving with a push in flight.
  EXPECT_TRUE(cluster.proc(0).running())
      << testing::ReadFileOrEmpty(cluster.log(0));
  EXPECT_TRUE(cluster.proc(1).running())
      << testing::ReadFileOrEmpty(cluster.log(1));
}

FABPS_INSTANTIATE_TCP_AND_SHM(CPServerTest);

}  // namespace
}  // namespace fabps
