// The control-plane limits are flags of the daemons: a tighter
// --first-request-timeout-ms closes a silent connection sooner than the
// default, and out-of-range values are one-line errors naming the flag.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <string>

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

}  // namespace
}  // namespace fabps
