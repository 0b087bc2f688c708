#include "base/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/util/subprocess.h"

namespace fabps {
namespace {

class ChildProcessTest : public ::testing::Test {
 protected:
  std::string Log() const { return dir_ + "/child.log"; }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // Spawns /bin/sh -c `script` with its output in Log().
  Result<ChildProcess> Shell(const std::string& script,
                             std::vector<std::string> env = {}) {
    SpawnOptions o;
    o.argv = {"/bin/sh", "-c", script};
    o.env = std::move(env);
    o.log_path = Log();
    return ChildProcess::Spawn(o);
  }

  testing::TempDir tmp_;
  const std::string dir_ = tmp_.path();
};

TEST_F(ChildProcessTest, OutputGoesToTheLogAndTheExitCodeComesBack) {
  auto c = Shell("echo \"out $FABPS_CHILD_A\"; echo err >&2; exit 3",
                 {"FABPS_CHILD_A=given"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto st = c->Wait(30000);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_TRUE(WIFEXITED(*st));
  EXPECT_EQ(WEXITSTATUS(*st), 3);
  EXPECT_TRUE(c->exited());
  EXPECT_FALSE(c->running());
  EXPECT_EQ(Read(Log()), "out given\nerr\n");
  EXPECT_EQ(c->log_path(), Log());
}

TEST_F(ChildProcessTest, EnvironmentEntryReplacesTheInheritedOne) {
  ASSERT_EQ(::setenv("FABPS_CHILD_B", "outer", 1), 0);
  auto c = Shell("echo \"$FABPS_CHILD_B\"; env | grep -c '^FABPS_CHILD_B='",
                 {"FABPS_CHILD_B=inner"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->Wait(30000).ok());
  EXPECT_EQ(Read(Log()), "inner\n1\n");
  ::unsetenv("FABPS_CHILD_B");
}

TEST_F(ChildProcessTest, LogIsAppendedOrTruncated) {
  { std::ofstream(Log()) << "before\n"; }
  ASSERT_TRUE(Shell("echo appended")->Wait(30000).ok());
  EXPECT_EQ(Read(Log()), "before\nappended\n");
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "echo fresh"};
  o.log_path = Log();
  o.truncate_log = true;
  auto c = ChildProcess::Spawn(o);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->Wait(30000).ok());
  EXPECT_EQ(Read(Log()), "fresh\n");
}

TEST_F(ChildProcessTest, OwnProcessGroupAndStdinFromDevNull) {
  SpawnOptions o;
  // Field 5 of /proc/PID/stat is the process group; cat ends at once on
  // /dev/null (on an inherited terminal it would wait).
  o.argv = {"/bin/sh", "-c", "cut -d' ' -f5 /proc/$$/stat; cat; echo eof"};
  o.log_path = Log();
  o.own_process_group = true;
  o.stdin_from_dev_null = true;
  auto c = ChildProcess::Spawn(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto st = c->Wait(30000);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(Read(Log()), std::to_string(c->pid()) + "\neof\n");
  EXPECT_NE(::getpgid(0), c->pid());
}

TEST_F(ChildProcessTest, SignalEndsTheChildAndWaitReportsIt) {
  auto c = Shell("exec sleep 60");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->running());
  ASSERT_TRUE(c->Signal(SIGTERM).ok());
  auto st = c->Wait(30000);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_TRUE(WIFSIGNALED(*st));
  EXPECT_EQ(WTERMSIG(*st), SIGTERM);
  EXPECT_EQ(c->Signal(SIGTERM).code(), Status::Code::kFailedPrecondition);
}

TEST_F(ChildProcessTest, WaitTimesOutAndTheHandleKillsAndReaps) {
  pid_t pid;
  {
    auto c = Shell("exec sleep 60");
    ASSERT_TRUE(c.ok());
    pid = c->pid();
    auto st = c->Wait(50);
    EXPECT_EQ(st.status().code(), Status::Code::kTimedOut);
    EXPECT_TRUE(c->running());
  }
  // Reaped by the destructor: no such child of ours any more.
  int st = 0;
  EXPECT_EQ(::waitpid(pid, &st, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

// A child that ignores SIGTERM is killed after the grace period.
TEST_F(ChildProcessTest, StopKillsAChildThatIgnoresTerm) {
  auto c = Shell("trap '' TERM; echo ready; exec sleep 60");
  ASSERT_TRUE(c.ok());
  // The trap must be in place before SIGTERM comes: wait for "ready".
  for (int i = 0; i < 6000 && Read(Log()).empty(); ++i) {
    ASSERT_TRUE(c->running());
    ::usleep(5000);
  }
  ASSERT_EQ(Read(Log()), "ready\n");
  auto st = c->Stop(200);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_TRUE(WIFSIGNALED(*st));
  EXPECT_EQ(WTERMSIG(*st), SIGKILL);
}

TEST_F(ChildProcessTest, FailedExecIsExitCode127WithTheReasonInTheLog) {
  SpawnOptions o;
  o.argv = {dir_ + "/no-such-program"};
  o.log_path = Log();
  auto c = ChildProcess::Spawn(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto st = c->Wait(30000);
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(WIFEXITED(*st));
  EXPECT_EQ(WEXITSTATUS(*st), 127);
  EXPECT_NE(Read(Log()).find("exec " + dir_ + "/no-such-program: "),
            std::string::npos)
      << Read(Log());
}

TEST_F(ChildProcessTest, BadArgumentsAreErrors) {
  EXPECT_EQ(ChildProcess::Spawn(SpawnOptions{}).status().code(),
            Status::Code::kInvalidArgument);
  SpawnOptions o;
  o.argv = {"/bin/true"};
  o.log_path = dir_ + "/no/such/dir/log";
  EXPECT_EQ(ChildProcess::Spawn(o).status().code(), Status::Code::kNotFound);
  ChildProcess none;
  EXPECT_EQ(none.pid(), -1);
  EXPECT_FALSE(none.running());
  EXPECT_EQ(none.Wait(10).status().code(), Status::Code::kFailedPrecondition);
}

TEST_F(ChildProcessTest, MovedHandleOwnsTheChild) {
  auto c = Shell("exec sleep 60");
  ASSERT_TRUE(c.ok());
  pid_t pid = c->pid();
  ChildProcess moved = std::move(*c);
  EXPECT_EQ(c->pid(), -1);
  EXPECT_EQ(moved.pid(), pid);
  EXPECT_TRUE(moved.running());
  moved.Kill();
  EXPECT_FALSE(moved.running());
  EXPECT_TRUE(WIFSIGNALED(moved.wait_status()));
}

}  // namespace
}  // namespace fabps
