// Supervision, as a cluster would test it: faults from outside the
// launcher, one of each kind, and the job still finishes. kill -9 of a
// pserver and of a trainer (the launcher restarts them), SIGSTOP of a
// pserver past its lease (on SIGCONT it sees the lost claim and exits 3 at
// once, and its restart takes the index back), a frozen pserver (replaced
// after --unresponsive-timeout), the injector's seed (printed, and the same
// seed kills the same slots), and fabps-supervise on its own.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "tests/util/launcher_argv.h"
#include "tests/util/proc_scan.h"
#include "tests/util/subprocess.h"
#include "tests/util/wait_until.h"

namespace fabps {
namespace {

using testing::Subprocess;
using testing::TempDir;

class Job {
 public:
  Job(const TempDir& dir, std::vector<std::string> extra) : dir_(dir) {
    testing::LauncherJob job;
    job.save_period = 1;
    // Long enough for faults injected after training started (a pass of
    // the C++ trainer takes about 1.5 s on a quiet machine).
    job.passes = 4;
    extra.insert(extra.begin(), {"--lease-ttl", "2"});
    std::vector<std::string> argv = testing::LauncherArgv(dir, job, extra);
    auto p = Subprocess::Start(argv, dir.File("launch.out"));
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (p.ok()) launcher_ = std::move(*p);
  }
  // Waits (up to 120 s) until a trainer reported training progress.
  bool WaitForTraining() {
    return testing::WaitUntil(
        [&] {
          return testing::ReadFileOrEmpty(dir_.File("run/trainer-0.metrics"))
                     .find("\"progress\"") != std::string::npos;
        },
        Deadline::InMs(120000));
  }
  // The PID of one live process of `program` in this job (-1: none).
  int Pid(const std::string& program) {
    auto pids = testing::LiveProcesses(program, dir_.File("run"));
    return pids.empty() ? -1 : pids.front();
  }
  // Waits for the launcher; its output, its exit code in *code.
  std::string Finish(int* code) {
    auto st = launcher_.Wait(240000);
    EXPECT_TRUE(st.ok()) << "launcher still running after 240 s";
    *code = st.ok() && WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
    return testing::ReadFileOrEmpty(dir_.File("launch.out"));
  }

 private:
  const TempDir& dir_;
  Subprocess launcher_;
};

void ExpectFinishedWithNothingLeft(const TempDir& dir, const std::string& out,
                                   int code) {
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("fabps job finished"), std::string::npos) << out;
  EXPECT_TRUE(testing::LiveProcesses("", dir.File("run")).empty())
      << "processes left behind";
}

TEST(Supervise, OutsideKillOfAPserverIsRestartedAndTheJobFinishes) {
  TempDir dir;
  Job job(dir, {});
  ASSERT_TRUE(job.WaitForTraining());
  int pid = job.Pid("fabps-pserver");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int code = -1;
  std::string out = job.Finish(&code);
  ExpectFinishedWithNothingLeft(dir, out, code);
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(supervisor: pserver-[01] ended \(signal 9)")))
      << out;
}

TEST(Supervise, OutsideKillOfATrainerIsRestartedAndTheJobFinishes) {
  TempDir dir;
  Job job(dir, {});
  ASSERT_TRUE(job.WaitForTraining());
  int pid = job.Pid("fabps-fashion-mnist-trainer");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int code = -1;
  std::string out = job.Finish(&code);
  ExpectFinishedWithNothingLeft(dir, out, code);
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(supervisor: trainer-[01] ended \(signal 9)")))
      << out;
}

// Frozen for three lease TTLs: the other processes expire its claim; on
// SIGCONT it must exit 3 by itself (the launcher is told not to replace
// it), and its restart takes the index back.
TEST(Supervise, PserverStoppedPastItsLeaseExitsAndIsRestarted) {
  TempDir dir;
  Job job(dir, {"--unresponsive-timeout", "3600"});
  ASSERT_TRUE(job.WaitForTraining());
  int pid = job.Pid("fabps-pserver");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  // The fault itself lasts 6 s (3 TTLs of --lease-ttl 2).
  std::this_thread::sleep_for(std::chrono::seconds(6));
  ASSERT_EQ(::kill(pid, SIGCONT), 0);
  EXPECT_TRUE(testing::WaitUntil([&] { return !testing::ProcessAlive(pid); },
                                 Deadline::InMs(60000)))
      << "the pserver did not exit after losing its claim";
  int code = -1;
  std::string out = job.Finish(&code);
  ExpectFinishedWithNothingLeft(dir, out, code);
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(supervisor: pserver-[01] ended \(exit code 3\))")))
      << out;
}

// Frozen and left frozen: the launcher sees it answer nothing, kills it
// and restarts it.
TEST(Supervise, FrozenPserverIsReplaced) {
  TempDir dir;
  Job job(dir, {"--unresponsive-timeout", "3"});
  ASSERT_TRUE(job.WaitForTraining());
  int pid = job.Pid("fabps-pserver");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  bool replaced = testing::WaitUntil(
      [&] { return !testing::ProcessAlive(pid); }, Deadline::InMs(120000));
  if (!replaced) ::kill(pid, SIGCONT);
  EXPECT_TRUE(replaced) << "the frozen pserver was not replaced";
  int code = -1;
  std::string out = job.Finish(&code);
  ExpectFinishedWithNothingLeft(dir, out, code);
  EXPECT_TRUE(
      std::regex_search(out, std::regex(R"(pserver-[01] ended )"
                                        R"(\(answered no status call)")))
      << out;
}

// The injector's victims come from a random seed, printed; the same seed
// kills the same processes in the same order.
TEST(Supervise, InjectorSeedIsPrintedAndReplays) {
  // The seed picks slots: each trainer, each pserver, and "the leading
  // master". Which of master and master-standby leads when the slot comes
  // up depends on the timing of the earlier take-over (the restarted master
  // may win the election back), so both name that one slot here.
  auto victims = [](const std::string& out) {
    std::vector<std::string> v;
    std::regex kill(R"(fault injected: killed ([a-z0-9-]+))");
    for (std::sregex_iterator it(out.begin(), out.end(), kill), end; it != end;
         ++it) {
      std::string name = (*it)[1];
      v.push_back(name.rfind("master", 0) == 0 ? "leading master" : name);
    }
    return v;
  };
  const std::vector<std::string> inject = {"--kill-random", "2", "--kill-every",
                                           "1"};
  TempDir first_dir;
  Job first(first_dir, inject);
  int code = -1;
  std::string out = first.Finish(&code);
  ASSERT_EQ(code, 0) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      out, m, std::regex(R"(fault injection seed: ([0-9]+) \(--kill-seed)")))
      << out;
  std::string seed = m[1];
  ASSERT_EQ(victims(out).size(), 2u) << out;

  TempDir again_dir;
  std::vector<std::string> replay = inject;
  replay.insert(replay.end(), {"--kill-seed", seed});
  Job again(again_dir, replay);
  std::string out2 = again.Finish(&code);
  ASSERT_EQ(code, 0) << out2;
  EXPECT_NE(out2.find("fault injection seed: " + seed), std::string::npos)
      << out2;
  EXPECT_EQ(victims(out2), victims(out)) << out << "\n---\n" << out2;
}

// fabps-supervise restarts a process that dies, until its budget is gone,
// then exits with the process's status; a clean exit ends it at once.
TEST(Supervise, SuperviseToolRestartsWithinItsBudget) {
  TempDir dir;
  std::string counter = dir.File("starts");
  // Each start appends a line; the third start exits 0.
  std::string script = "echo x >> " + counter + "; test $(wc -l < " + counter +
                       ") -ge 3 && exit 0; "
                       "kill -9 $$";
  auto p = Subprocess::Start(
      {testing::BuiltBinary("cmd/launch/fabps-supervise"), "--backoff", "0.05",
       "demo", "--", "/bin/sh", "-c", script},
      dir.File("out"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto st = p->Wait(60000);
  ASSERT_TRUE(st.ok());
  std::string out = testing::ReadFileOrEmpty(dir.File("out"));
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << out;
  EXPECT_NE(out.find("demo ended (signal 9"), std::string::npos) << out;
  EXPECT_NE(out.find("restart 2 of 10 for role demo"), std::string::npos)
      << out;

  // Out of budget: the process's own status comes back (128 + 9).
  ::unlink(counter.c_str());
  auto q = Subprocess::Start(
      {testing::BuiltBinary("cmd/launch/fabps-supervise"), "--backoff", "0.05",
       "--restarts", "1", "demo", "--", "/bin/sh", "-c", "kill -9 $$"},
      dir.File("out2"));
  ASSERT_TRUE(q.ok());
  st = q->Wait(60000);
  ASSERT_TRUE(st.ok());
  std::string out2 = testing::ReadFileOrEmpty(dir.File("out2"));
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 128 + SIGKILL) << out2;
  EXPECT_NE(out2.find("used all 1 restarts"), std::string::npos) << out2;
}

// A program named without a slash is found on PATH (as a shell would), and
// one that is nowhere is an error at once, not ten restarts of exit 127.
TEST(Supervise, SuperviseToolFindsProgramsOnPathAndRefusesMissingOnes) {
  TempDir dir;
  auto p = Subprocess::Start(
      {testing::BuiltBinary("cmd/launch/fabps-supervise"), "--backoff", "0.05",
       "demo", "--", "sh", "-c", "echo ran-from-path"},
      dir.File("out"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto st = p->Wait(60000);
  ASSERT_TRUE(st.ok());
  std::string out = testing::ReadFileOrEmpty(dir.File("out"));
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << out;
  EXPECT_NE(out.find("ran-from-path"), std::string::npos) << out;

  auto q = Subprocess::Start(
      {testing::BuiltBinary("cmd/launch/fabps-supervise"), "--backoff", "0.05",
       "demo", "--", "fabps-no-such-program-here"},
      dir.File("out2"));
  ASSERT_TRUE(q.ok());
  st = q->Wait(60000);
  ASSERT_TRUE(st.ok());
  std::string out2 = testing::ReadFileOrEmpty(dir.File("out2"));
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 2) << out2;
  EXPECT_NE(out2.find("not found in PATH"), std::string::npos) << out2;
  EXPECT_EQ(out2.find("restart"), std::string::npos) << out2;

  // A path that cannot be executed: exit 127 from the child, not restarted.
  auto r = Subprocess::Start(
      {testing::BuiltBinary("cmd/launch/fabps-supervise"), "--backoff", "0.05",
       "demo", "--", dir.File("missing-binary")},
      dir.File("out3"));
  ASSERT_TRUE(r.ok());
  st = r->Wait(60000);
  ASSERT_TRUE(st.ok());
  std::string out3 = testing::ReadFileOrEmpty(dir.File("out3"));
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 127) << out3;
  EXPECT_EQ(out3.find("restart 1"), std::string::npos) << out3;
}

}  // namespace
}  // namespace fabps
