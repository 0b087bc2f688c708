// fabps-status against real daemons on an embedded (local:) store: a whole
// job is healthy (exit 0) and its table and JSON name the master and every
// pserver index; a job missing an index or its master is unhealthy (exit
// 1), saying which.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/master/master_process.h"
#include "tests/util/subprocess.h"

namespace fabps {
namespace {

using testing::BuiltBinary;
using testing::ReadFileOrEmpty;
using testing::Subprocess;
using testing::TempDir;

struct StatusRun {
  int exit_code = -1;
  std::string out;
};

// Runs fabps-status with `args`; its stdout and stderr.
StatusRun RunStatus(const TempDir& dir, std::vector<std::string> args) {
  static int runs = 0;
  std::string log = dir.File("status-" + std::to_string(runs++) + ".out");
  args.insert(args.begin(), BuiltBinary("cmd/status/fabps-status"));
  StatusRun r;
  auto p = Subprocess::Start(args, log);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return r;
  auto st = p->Wait(60'000);
  EXPECT_TRUE(st.ok()) << st.status().ToString();
  if (st.ok() && WIFEXITED(*st)) r.exit_code = WEXITSTATUS(*st);
  r.out = ReadFileOrEmpty(log);
  return r;
}

// A pserver of job "test" on `store` that claims an index; waits until it
// serves (its port file).
Result<Subprocess> StartPserver(const TempDir& dir, const std::string& store,
                                int num_pservers, int n) {
  std::string port_file = dir.File("ps-" + std::to_string(n) + ".port");
  std::string log = dir.File("ps-" + std::to_string(n) + ".log");
  FABPS_ASSIGN_OR_RETURN(
      Subprocess p,
      Subprocess::Start(
          {BuiltBinary("pserver/daemon/fabps-pserver"), "--provider",
           "tcp;ofi_rxm", "--store", store, "--job", "test", "--num-pservers",
           std::to_string(num_pservers), "--port-file", port_file,
           "--checkpoint-dir", dir.File("ckpt")},
          log));
  Deadline deadline = Deadline::InMs(30'000);
  while (!deadline.Expired()) {
    std::string c = ReadFileOrEmpty(port_file);
    if (!c.empty() && c.back() == '\n') return p;
    if (!p.running())
      return Status::Unavailable("pserver exited: " + ReadFileOrEmpty(log));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::TimedOut("pserver did not serve: " + ReadFileOrEmpty(log));
}

TEST(StatusToolTest, AWholeJobIsHealthy) {
  TempDir dir;
  std::string store = "local:" + dir.File("store");
  auto master = testing::MasterProcess::Start(
      dir.File("master"), dir.File("master.log"), {"--store", store});
  ASSERT_TRUE(master.ok()) << master.status().ToString();
  auto ps0 = StartPserver(dir, store, 2, 0);
  ASSERT_TRUE(ps0.ok()) << ps0.status().ToString();
  auto ps1 = StartPserver(dir, store, 2, 1);
  ASSERT_TRUE(ps1.ok()) << ps1.status().ToString();

  StatusRun table = RunStatus(dir, {"--store", store, "--job", "test"});
  EXPECT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("healthy"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(master->address()), std::string::npos) << table.out;

  StatusRun json =
      RunStatus(dir, {"--store", store, "--job", "test", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.out;
  auto j = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json.out;
  EXPECT_TRUE(j["healthy"].get<bool>());
  EXPECT_EQ(j["master"]["address"], master->address());
  EXPECT_EQ(j["master"]["error"], "");
  ASSERT_EQ(j["num_pservers"], 2);
  ASSERT_EQ(j["pservers"].size(), 2u);
  for (int i = 0; i < 2; i++) {
    const auto& p = j["pservers"][i];
    EXPECT_EQ(p["index"], i);
    EXPECT_NE(p["address"], "");
    EXPECT_NE(p["lease"], 0);
    EXPECT_EQ(p["error"], "");
    EXPECT_FALSE(p["initialized"].get<bool>());  // no trainer yet
  }
  EXPECT_EQ(j["init"], "not started");

  // pserver 1 stops (checkpoint recorded, claim released): index 1 missing.
  ASSERT_TRUE(ps1->Stop().ok());
  StatusRun missing =
      RunStatus(dir, {"--store", store, "--job", "test", "-o", "json"});
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  auto m = nlohmann::json::parse(missing.out, nullptr, false);
  ASSERT_FALSE(m.is_discarded()) << missing.out;
  EXPECT_FALSE(m["healthy"].get<bool>());
  EXPECT_EQ(m["pservers"][1]["address"], "");
  ASSERT_EQ(m["problems"].size(), 1u) << missing.out;
  EXPECT_NE(m["problems"][0].get<std::string>().find("index 1"),
            std::string::npos)
      << missing.out;
}

TEST(StatusToolTest, NoMasterIsUnhealthy) {
  TempDir dir;
  std::string store = "local:" + dir.File("store");
  auto ps0 = StartPserver(dir, store, 1, 0);
  ASSERT_TRUE(ps0.ok()) << ps0.status().ToString();
  StatusRun r = RunStatus(dir, {"--store", store, "--job", "test"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("UNHEALTHY"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no master"), std::string::npos) << r.out;
}

TEST(StatusToolTest, BadFlagsAreNamed) {
  TempDir dir;
  StatusRun r = RunStatus(
      dir, {"--store", "local:" + dir.File("s"), "--job", "bad/name"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--job"), std::string::npos) << r.out;
  StatusRun o =
      RunStatus(dir, {"--store", "local:" + dir.File("s"), "-o", "yaml"});
  EXPECT_NE(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("yaml"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace fabps
