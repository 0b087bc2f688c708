// fabps-master's metrics port: after a dataset is set, GET /metrics shows
// the dispatcher's task counts (fabps_master_tasks{state="todo"} = every
// task) and the pass, read from the real daemon.
#include <gtest/gtest.h>
#include <httplib.h>

#include <string>

#include "tests/master/master_process.h"
#include "tests/master/test_dataset.h"
#include "trainer/master_client.h"

namespace fabps {
namespace {

TEST(MasterMetricsTest, TaskCountsAppearOnTheMetricsPort) {
  testing::TempDir dir;
  std::string port_file = dir.File("metrics.port");
  auto master = testing::MasterProcess::Start(
      dir.File("state"), dir.File("master.log"),
      {"--metrics-port-file", port_file, "--chunks-per-task", "1"});
  ASSERT_TRUE(master.ok()) << master.status().ToString();
  std::string port = testing::ReadFileOrEmpty(port_file);
  ASSERT_FALSE(port.empty()) << "no " << port_file;

  std::string glob = testing::MakeDataset(dir.path(), 2, 3, 4);  // 6 chunks
  trainer::MasterClientOptions o;
  o.master_address = master->address();
  auto c = trainer::MasterClient::Create(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE((*c)->SetDataset({glob}).ok());

  httplib::Client http("127.0.0.1", std::stoi(port));
  http.set_read_timeout(20);
  auto res = http.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200);
  const std::string& body = res->body;
  EXPECT_NE(body.find("# TYPE fabps_master_tasks gauge\n"), std::string::npos)
      << body;
  EXPECT_NE(body.find("fabps_master_tasks{state=\"todo\"} 6\n"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("fabps_master_tasks{state=\"done\"} 0\n"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("fabps_master_pass 0\n"), std::string::npos) << body;
  EXPECT_NE(body.find("fabps_master_task_timeouts_total 0\n"),
            std::string::npos)
      << body;
}

}  // namespace
}  // namespace fabps
