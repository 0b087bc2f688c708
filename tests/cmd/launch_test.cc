// The main job as a user runs it: fabps-launch starts a real master,
// pservers and trainers of the Fashion-MNIST example, trains one pass, and
// leaves no process behind; and again with a pserver killed and restarted
// mid-run, and on etcd with the leading master killed (its standby takes
// over); and the same with the PyTorch trainer (--trainer torch): three
// passes reach 0.85 test accuracy, and a pserver killed mid-run; and the
// CTR model (--model ctr): on its default hashed table (async) and on a
// fixed table (--mode sync), within 0.97 of the planted model's test AUC,
// the summary showing the hashed table's rows, also with its PyTorch trainer
// (--model ctr --trainer torch); and a short one-pass job on the hashed
// table.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <regex>
#include <sstream>
#include <string>

#include "tests/util/launcher_argv.h"
#include "tests/util/proc_scan.h"
#include "tests/util/subprocess.h"

namespace fabps {
namespace {

using testing::Subprocess;
using testing::TempDir;

// The last lines of every process's log in `run_dir`: what a failed job's
// test prints, since the run directory is gone after the test.
std::string LogTails(const std::string& run_dir, size_t lines = 40) {
  std::string out;
  DIR* d = opendir(run_dir.c_str());
  if (d == nullptr) return out;
  std::vector<std::string> logs;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0)
      logs.push_back(name);
  }
  closedir(d);
  std::sort(logs.begin(), logs.end());
  for (const auto& name : logs) {
    std::istringstream in(testing::ReadFileOrEmpty(run_dir + "/" + name));
    std::deque<std::string> tail;
    for (std::string line; std::getline(in, line);) {
      tail.push_back(line);
      if (tail.size() > lines) tail.pop_front();
    }
    out += "\n==== last lines of " + name + " ====\n";
    for (const auto& line : tail) out += line + "\n";
  }
  return out;
}

// Runs the launcher; returns its output, with its exit code in *code.
std::string RunLauncher(const TempDir& dir,
                        const std::vector<std::string>& extra, int* code,
                        int passes = 1) {
  testing::LauncherJob job;
  job.passes = passes;
  job.save_period = 2;
  std::vector<std::string> argv = testing::LauncherArgv(dir, job, extra);
  auto p = Subprocess::Start(argv, dir.File("launch.out"));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  auto st = p->Wait(240000);
  EXPECT_TRUE(st.ok()) << "launcher still running after 240 s";
  *code = st.ok() && WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
  std::string out = testing::ReadFileOrEmpty(dir.File("launch.out"));
  if (*code != 0) out += LogTails(dir.File("run"));
  return out;
}

// Passes of a job whose --kill-every 1 must strike before it ends: a pass
// of the C++ trainer takes about 1.5 s on a quiet machine.
constexpr int kPassesForAKill = 4;

// The test accuracy of pass `pass` (1, 2, ...) in the final table.
double AccuracyOfPass(const std::string& out, int pass) {
  std::smatch m;
  std::regex row("\n" + std::to_string(pass) +
                 R"(\s+[0-9.naN]+\s+([0-9.]+)\s)");
  if (std::regex_search(out, m, row)) return std::stod(m[1]);
  return -1;
}

double AccuracyOfPass1(const std::string& out) {
  return AccuracyOfPass(out, 1);
}

TEST(Launch, OnePassTrainsAndLeavesNothingBehind) {
  TempDir dir;
  int code = -1;
  std::string out = RunLauncher(dir, {}, &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("fabps job finished"), std::string::npos) << out;
  double acc = AccuracyOfPass1(out);
  EXPECT_GT(acc, 0.5) << "10 classes: chance is 0.1\n" << out;
  EXPECT_TRUE(testing::LiveProcesses("", dir.File("run")).empty())
      << "processes left behind";
}

// Output that is not a terminal (here a file) is plain: no control
// characters, and for each pass, in order, exactly one line: its final one,
// all tasks done, ending with its test accuracy.
TEST(Launch, PlainOutputHasOneFinalLinePerPass) {
  TempDir dir;
  int code = -1;
  std::string out = RunLauncher(dir, {}, &code, /*passes=*/2);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(out.find('\033'), std::string::npos) << out;
  std::regex any_pass_line(R"(^pass [0-9]+/)");
  std::regex final_line(
      R"(^pass ([0-9]+)/2 \[#{20}\] ([0-9]+)/([0-9]+) tasks \| .* \| acc )"
      R"(0\.[0-9]{4}$)");
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, any_pass_line)) lines.push_back(line);
  }
  ASSERT_EQ(lines.size(), 2u) << out;
  for (size_t i = 0; i < lines.size(); i++) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(lines[i], m, final_line)) << lines[i];
    EXPECT_EQ(m[1], std::to_string(i + 1)) << out;
    EXPECT_EQ(m[2], m[3]) << "a final line has every task done: " << lines[i];
  }
}

TEST(Launch, SurvivesAPserverKilledAndRestartedOverTls) {
  TempDir dir;
  int code = -1;
  // Passes enough that the kill, 1 s into training, comes before the end
  // on a fast machine (a pass of the C++ trainer takes about 1.5 s).
  std::string out = RunLauncher(dir,
                                {"--kill-random", "1", "--kill-target",
                                 "pserver", "--kill-every", "1", "--tls"},
                                &code, kPassesForAKill);
  ASSERT_EQ(code, 0) << out;
  // Over mutual TLS: the restarted pserver and the reconnecting trainers
  // make new TLS sessions.
  EXPECT_NE(out.find("control plane: TLS"), std::string::npos) << out;
  EXPECT_NE(out.find("fault injected: killed pserver-"), std::string::npos)
      << out;
  double acc = AccuracyOfPass1(out);
  EXPECT_GT(acc, 0.5) << out;
  EXPECT_TRUE(testing::LiveProcesses("", dir.File("run")).empty())
      << "processes left behind";
}

TEST(Launch, OnEtcdSurvivesTheLeadingMasterKilled) {
  if (testing::ReadFileOrEmpty("/usr/bin/etcd").empty())
    GTEST_SKIP() << "etcd not installed";
  TempDir dir;
  int code = -1;
  std::string out =
      RunLauncher(dir,
                  {"--start-etcd", "--kill-random", "1", "--kill-target",
                   "master", "--kill-every", "1"},
                  &code, kPassesForAKill);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("fault injected: killed master"), std::string::npos)
      << out;
  double acc = AccuracyOfPass1(out);
  EXPECT_GT(acc, 0.5) << out;
  EXPECT_TRUE(testing::LiveProcesses("", dir.File("run")).empty())
      << "processes left behind";
  // The job's etcd stopped after its clients: each pserver recorded its
  // last checkpoint and released its claim in it.
  for (int i = 0; i < 2; i++) {
    std::string log = testing::ReadFileOrEmpty(
        dir.File("run/pserver-" + std::to_string(i) + ".log"));
    EXPECT_NE(log.find("checkpointing and shutting down"), std::string::npos)
        << log;
    EXPECT_EQ(log.find("recording the checkpoint:"), std::string::npos) << log;
    EXPECT_EQ(log.find("releasing the claim:"), std::string::npos) << log;
  }
}

// --trainer torch needs the build's Python package and Debian's torch.
bool TorchTrainerAvailable(std::string* why) {
  if (testing::ReadFileOrEmpty(testing::BuiltBinary("python/fabps/__init__.py"))
          .empty()) {
    *why = "the fabps Python package is not built (FABPS_BUILD_PYTHON)";
    return false;
  }
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    *why = "/usr/bin/python3 has no torch (apt-get install python3-torch)";
    return false;
  }
  return true;
}

TEST(Launch, TorchTrainersReach85PercentInThreePasses) {
  std::string why;
  if (!TorchTrainerAvailable(&why)) GTEST_SKIP() << why;
  TempDir dir;
  int code = -1;
  std::string out = RunLauncher(dir, {"--trainer", "torch"}, &code, 3);
  ASSERT_EQ(code, 0) << out;
  EXPECT_GE(AccuracyOfPass(out, 3), 0.85) << out;
  EXPECT_TRUE(testing::LiveProcesses("", dir.File("run")).empty())
      << "processes left behind";
}

TEST(Launch, TorchTrainersSurviveAPserverKilledAndRestarted) {
  std::string why;
  if (!TorchTrainerAvailable(&why)) GTEST_SKIP() << why;
  // The provider's warnings in the logs LogTails prints when the job fails.
  setenv("FI_LOG_LEVEL", "warn", 1);
  TempDir dir;
  int code = -1;
  std::string out =
      RunLauncher(dir,
                  {"--trainer", "torch", "--kill-random", "1", "--kill-target",
                   "pserver", "--kill-every", "1"},
                  &code, kPassesForAKill);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("fault injected: killed pserver-"), std::string::npos)
      << out;
  EXPECT_GT(AccuracyOfPass1(out), 0.5) << out;
  EXPECT_TRUE(testing::LiveProcesses("", dir.File("run")).empty())
      << "processes left behind";
}

// --model ctr on 200000 generated impressions with `extra` flags: two
// passes, each with its test AUC, the last within 0.97 of the planted
// model's AUC on the same test records. Returns the output.
std::string ExpectCtrWithin97Percent(const TempDir& dir,
                                     const std::vector<std::string>& extra) {
  int code = -1;
  std::vector<std::string> flags = {"--model", "ctr", "--ctr-records",
                                    "200000"};
  flags.insert(flags.end(), extra.begin(), extra.end());
  std::string out = RunLauncher(dir, flags, &code, /*passes=*/2);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("test AUC"), std::string::npos) << out;
  std::regex pass_line(R"(\npass 2/2 \[#{20}\] .* \| auc 0\.[0-9]{4}\n)");
  EXPECT_TRUE(std::regex_search(out, pass_line)) << out;
  double first = AccuracyOfPass(out, 1), last = AccuracyOfPass(out, 2);
  EXPECT_GT(first, 0.5) << out;
  std::smatch m;
  std::regex planted(R"(planted model's test AUC: ([0-9.]+) \(last pass: )"
                     R"(([0-9.]+) = )");
  EXPECT_TRUE(std::regex_search(out, m, planted)) << out;
  if (!m.empty()) {
    double planted_auc = std::stod(m[1]);
    EXPECT_GT(planted_auc, 0.8) << out;
    EXPECT_GE(last, 0.97 * planted_auc) << out;
  }
  EXPECT_TRUE(testing::LiveProcesses("", dir.File("run")).empty())
      << "processes left behind";
  return out;
}

// The summary's line of a hashed table, e.g. "hashed table emb: 15998 rows
// held (11.1 MiB on 2 pservers), 15998 admitted, 0 evicted (ttl 0, budget
// 0), 18489 pushed rows not admitted".
struct HashedTableLine {
  bool found = false;
  int64_t rows = 0, pservers = 0, admitted = 0, evicted = 0, not_admitted = 0;
};

HashedTableLine HashedTableOf(const std::string& out, const std::string& name) {
  HashedTableLine t;
  std::smatch m;
  std::regex line("\nhashed table " + name +
                  R"(: (\d+) rows held \([0-9.]+ MiB on (\d+) pservers\), )"
                  R"((\d+) admitted, (\d+) evicted \(ttl \d+, budget \d+\), )"
                  R"((\d+) pushed rows not admitted\n)");
  if (!std::regex_search(out, m, line)) return t;
  t.found = true;
  t.rows = std::stoll(m[1]);
  t.pservers = std::stoll(m[2]);
  t.admitted = std::stoll(m[3]);
  t.evicted = std::stoll(m[4]);
  t.not_admitted = std::stoll(m[5]);
  return t;
}

// The default table: hashed, keyed by the raw 64-bit feature ids, with
// admission after 2 pushes and a TTL; the summary shows its rows as the
// pservers held them at the end.
TEST(Launch, CtrModelComesWithin97PercentOfThePlantedAuc) {
  TempDir dir;
  std::string out = ExpectCtrWithin97Percent(dir, {});
  HashedTableLine t = HashedTableOf(out, "emb");
  ASSERT_TRUE(t.found) << out;
  EXPECT_EQ(t.pservers, 2) << out;
  // 8 fields of 2000 values each: every value comes at least twice.
  EXPECT_GT(t.rows, 1000) << out;
  EXPECT_LE(t.rows, 8 * 2000) << out;
  EXPECT_EQ(t.admitted, t.rows + t.evicted) << out;
  EXPECT_GT(t.not_admitted, 0)
      << "admission after 2 pushes drops the first" << out;
  std::string t0 = testing::ReadFileOrEmpty(dir.File("run/trainer-0.log")) +
                   testing::ReadFileOrEmpty(dir.File("run/trainer-1.log"));
  EXPECT_NE(t0.find("hashed table of 16-float rows in 8 buckets"),
            std::string::npos)
      << t0;
}

// The PyTorch CTR trainer (examples/ctr_torch, fabps.torch.EmbeddingBag)
// under the launcher: the same flags, AUC and summary as the C++ one's;
// sync mode is the C++ trainer's only.
TEST(Launch, TorchCtrTrainersComeWithin97PercentOfThePlantedAuc) {
  std::string why;
  if (!TorchTrainerAvailable(&why)) GTEST_SKIP() << why;
  TempDir dir;
  std::string out = ExpectCtrWithin97Percent(dir, {"--trainer", "torch"});
  HashedTableLine t = HashedTableOf(out, "emb");
  ASSERT_TRUE(t.found) << out;
  EXPECT_GT(t.rows, 1000) << out;
  EXPECT_EQ(t.admitted, t.rows + t.evicted) << out;
  std::string t0 = testing::ReadFileOrEmpty(dir.File("run/trainer-0.log"));
  EXPECT_NE(t0.find("fabps-ctr-torch"), std::string::npos) << t0;

  TempDir sync_dir;
  int code = -1;
  std::string refused = RunLauncher(
      sync_dir, {"--model", "ctr", "--trainer", "torch", "--mode", "sync"},
      &code, 1);
  EXPECT_EQ(code, 2) << refused;
  EXPECT_NE(refused.find("--mode sync: with --trainer cpp only"),
            std::string::npos)
      << refused;
}

// A short job on the hashed table (one pass over 20000 impressions): rows
// held, and a test AUC well above chance.
TEST(Launch, CtrModelOnAHashedTableInOneShortPass) {
  TempDir dir;
  int code = -1;
  std::string out = RunLauncher(
      dir, {"--model", "ctr", "--ctr-records", "20000", "--table", "hashed"},
      &code, /*passes=*/1);
  ASSERT_EQ(code, 0) << out;
  HashedTableLine t = HashedTableOf(out, "emb");
  ASSERT_TRUE(t.found) << out;
  EXPECT_GT(t.rows, 0) << out;
  std::smatch m;
  std::regex planted(R"(planted model's test AUC: ([0-9.]+) \(last pass: )"
                     R"(([0-9.]+) = )");
  ASSERT_TRUE(std::regex_search(out, m, planted)) << out;
  EXPECT_GE(std::stod(m[2]), 0.9 * std::stod(m[1])) << out;
}

// The same in sync mode (--mode sync): the pservers sum both trainers'
// rows and MLP gradients per step; trainers that run out of records keep
// stepping with empty shares until the pass ends for both at the same step,
// so no step waits for the step deadline.
TEST(Launch, CtrModelInSyncModeComesWithin97PercentOfThePlantedAuc) {
  TempDir dir;
  // A step deadline no load makes a trainer miss: a forced step then means
  // a trainer stopped stepping, not that the machine was slow.
  // Sync mode takes the fixed table (hashed tables run async): a 2^18-row
  // one here.
  std::string out =
      ExpectCtrWithin97Percent(dir, {"--mode", "sync", "--step-deadline-ms",
                                     "60000", "--table-rows", "262144"});
  EXPECT_EQ(out.find("hashed table"), std::string::npos) << out;
  std::string ps = testing::ReadFileOrEmpty(dir.File("run/pserver-0.log")) +
                   testing::ReadFileOrEmpty(dir.File("run/pserver-1.log"));
  EXPECT_NE(ps.find("sync mode: each step applies the sum of 2"),
            std::string::npos)
      << ps;
  EXPECT_EQ(ps.find("after the step deadline"), std::string::npos) << ps;
  std::string t0 = testing::ReadFileOrEmpty(dir.File("run/trainer-0.metrics"));
  EXPECT_NE(t0.find("\"lost_steps\":0"), std::string::npos) << t0;
}

}  // namespace
}  // namespace fabps
