// The control-plane limits are flags of the daemons: a tighter
// --first-request-timeout-ms closes a silent connection sooner than the
// default, and out-of-range values are one-line errors naming the flag. A
// pserver whose fabric does not open says why and exits 1.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/master/master_process.h"
#include "tests/util/raw_socket.h"
#include "tests/util/subprocess.h"

namespace fabps {
namespace {

using testing::MasterProcess;
using testing::RawSocket;
using testing::TempDir;

TEST(DaemonFlags, FirstRequestTimeoutClosesASilentConnection) {
  TempDir dir;
  auto m = MasterProcess::Start(dir.File("state"), dir.File("master.log"),
                                {"--first-request-timeout-ms", "300"});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto s = RawSocket::Connect("127.0.0.1", m->port);
  ASSERT_TRUE(s.ok());
  auto start = std::chrono::steady_clock::now();
  // The default (10 s) would keep it past this wait.
  EXPECT_TRUE(s->WaitClosed(5000)) << "a silent connection was kept";
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(secs, 5.0);
  std::printf("silent connection closed after %.2f s\n", secs);
  m->proc.Stop();
}

TEST(DaemonFlags, OutOfRangeValuesNameTheFlag) {
  struct Case {
    std::string binary, flag, value;
  };
  for (const Case& c : {Case{"master/fabps-master", "--max-connections", "0"},
                        Case{"master/fabps-master", "--idle-timeout-ms", "-1"},
                        Case{"pserver/daemon/fabps-pserver",
                             "--frame-timeout-ms", "99999999999"},
                        Case{"pserver/daemon/fabps-pserver",
                             "--first-request-timeout-ms", "x"}}) {
    TempDir dir;
    auto p = testing::Subprocess::Start(
        {testing::BuiltBinary(c.binary), c.flag, c.value}, dir.File("log"));
    ASSERT_TRUE(p.ok());
    auto st = p->Wait(20000);
    ASSERT_TRUE(st.ok());
    EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) != 0) << c.flag;
    std::string log = testing::ReadFileOrEmpty(dir.File("log"));
    EXPECT_NE(log.find(c.flag), std::string::npos) << log;
  }
}

// A pserver whose fabric does not open (a provider that does not work
// here, an interface address it does not have) says why and exits 1; it
// never dies on a signal.
TEST(DaemonFlags, PserverWhoseFabricDoesNotOpenSaysWhy) {
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  };
  for (const Case& c :
       {Case{{"--provider", "bogus"}, "provider 'bogus' does not work here"},
        Case{{"--provider", "tcp;ofi_rxm", "--interface", "198.18.0.1"},
             "fabric: "}}) {
    TempDir dir;
    std::vector<std::string> argv = {
        testing::BuiltBinary("pserver/daemon/fabps-pserver"), "--port", "0",
        "--checkpoint-dir", dir.File("ckpt")};
    argv.insert(argv.end(), c.flags.begin(), c.flags.end());
    auto run = testing::RunToExit(argv, dir.File("log"), 30000);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_EQ(run->code, 1) << "(-1: ended by a signal)\n" << run->output;
    EXPECT_NE(run->output.find(c.says), std::string::npos) << run->output;
  }
}

}  // namespace
}  // namespace fabps
