// The job token against real fabps-master and fabps-pserver processes
// started with --token-file: the right token is served, a wrong or missing
// one is refused (before any method runs: no layout, no addresses, no
// registration), the refusal is logged, and the server keeps serving good
// clients. Plus the token loader and comparison.
#include "thrift/job_token.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "tests/master/master_process.h"
#include "tests/trainer/pserver_cluster.h"
#include "tests/util/subprocess.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/master/Master.h"
#include "thrift_gen/pserver/PServer.h"

namespace fabps {
namespace {

using testing::MasterProcess;
using testing::PServerCluster;
using testing::ReadFileOrEmpty;
using testing::TempDir;

constexpr char kToken[] = "s3cret-job-token-0123456789";

class JobTokenTest : public ::testing::TestWithParam<std::string> {
 protected:
  bool is_master() const { return GetParam() == "master"; }
  void SetUp() override {
    token_file_ = dir_.File("token");
    std::ofstream(token_file_) << kToken << "\n";
    std::vector<std::string> flags = {"--token-file", token_file_};
    if (is_master()) {
      auto m = MasterProcess::Start(dir_.File("master-state"),
                                    dir_.File("master.log"), flags);
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      master_ = std::move(m).value();
      port_ = master_.port;
      log_ = dir_.File("master.log");
    } else {
      cluster_ = std::make_unique<PServerCluster>("tcp;ofi_rxm", 1, flags);
      Status s = cluster_->Start(0);
      ASSERT_TRUE(s.ok()) << s.ToString();
      port_ = std::stoi(cluster_->addresses()[0].substr(10));
      log_ = cluster_->log(0);
    }
  }
  void TearDown() override {
    if (is_master()) {
      master_.proc.Stop();
    } else if (cluster_) {
      cluster_->proc(0).Stop();
    }
  }
  // One status call with `token` ("" presents none: the test's environment
  // has no FABPS_JOB_TOKEN).
  Status Call(const std::string& token) {
    rpc::RpcClientOptions o;
    o.port = port_;
    o.token = token;
    o.recv_timeout_ms = o.send_timeout_ms = 5000;
    if (is_master()) {
      rpc::RpcConnection<rpc::master::MasterClient> c(o);
      return c.Call("Status", [](rpc::master::MasterClient& m) {
        rpc::master::MasterStatus st;
        m.Status(st);
      });
    }
    rpc::RpcConnection<rpc::pserver::PServerClient> c(o);
    return c.Call("GetStatus", [](rpc::pserver::PServerClient& p) {
      rpc::pserver::PsStatus st;
      p.GetStatus(st);
    });
  }

  TempDir dir_;
  std::string token_file_, log_;
  MasterProcess master_;
  std::unique_ptr<PServerCluster> cluster_;
  int port_ = 0;
};

TEST_P(JobTokenTest, RightTokenServedWrongOrMissingRefused) {
  ASSERT_EQ(std::getenv("FABPS_JOB_TOKEN"), nullptr)
      << "the test needs an environment without a job token";
  EXPECT_TRUE(Call(kToken).ok()) << Call(kToken).ToString();

  Status wrong = Call("not-the-token");
  EXPECT_EQ(wrong.code(), Status::Code::kPermissionDenied) << wrong.ToString();
  Status none = Call("");
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.ToString().find("job token required"), std::string::npos)
      << none.ToString();
  // A stranger cannot register with a pserver either (the fabric
  // handshake: addresses and remote keys are handed out there).
  if (!is_master()) {
    rpc::RpcClientOptions o;
    o.port = port_;
    rpc::RpcConnection<rpc::pserver::PServerClient> c(o);
    Status reg = c.Call("RegisterTrainer", [](rpc::pserver::PServerClient& p) {
      rpc::pserver::Registration r;
      rpc::pserver::TrainerHello h;
      h.trainer_id = 7;
      p.RegisterTrainer(r, h);
    });
    EXPECT_FALSE(reg.ok());
  }
  // Refusals are logged; the server still serves the right token.
  std::string log = ReadFileOrEmpty(log_);
  EXPECT_NE(log.find("wrong job token"), std::string::npos) << log;
  EXPECT_NE(log.find("no job token presented"), std::string::npos) << log;
  EXPECT_TRUE(Call(kToken).ok());
}

INSTANTIATE_TEST_SUITE_P(Daemons, JobTokenTest,
                         ::testing::Values("master", "pserver"));

TEST(JobToken, LoadsFromFileAndValidates) {
  TempDir dir;
  std::ofstream(dir.File("t")) << "abc\n";
  auto t = rpc::LoadJobToken(dir.File("t"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "abc");
  std::ofstream(dir.File("empty")) << "\n";
  EXPECT_EQ(rpc::LoadJobToken(dir.File("empty")).status().code(),
            Status::Code::kInvalidArgument);
  std::ofstream(dir.File("big")) << std::string(rpc::kMaxTokenBytes + 1, 'x');
  EXPECT_FALSE(rpc::LoadJobToken(dir.File("big")).ok());
  auto missing = rpc::LoadJobToken(dir.File("nope"));
  EXPECT_EQ(missing.status().code(), Status::Code::kIOError);
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  EXPECT_TRUE(rpc::TokensEqual("abc", "abc"));
  EXPECT_FALSE(rpc::TokensEqual("abc", "abd"));
  EXPECT_FALSE(rpc::TokensEqual("abc", "abcd"));
}

TEST(JobToken, DaemonRefusesABadTokenFileWithOneLine) {
  TempDir dir;
  auto p = testing::Subprocess::Start(
      {testing::BuiltBinary("master/fabps-master"), "--state-dir",
       dir.File("s"), "--token-file", dir.File("missing")},
      dir.File("log"));
  ASSERT_TRUE(p.ok());
  auto st = p->Wait(20000);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 2);
  EXPECT_NE(ReadFileOrEmpty(dir.File("log")).find("--token-file"),
            std::string::npos);
}

}  // namespace
}  // namespace fabps
