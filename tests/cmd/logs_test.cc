// fabps-logs and its reader (cmd/logs): base/log.h's lines (text and
// JSON) parsed, a run directory's logs merged by time and filtered, a
// growing directory followed, and the logs of real launcher runs (text and
// --log-format json) merged, each line naming its process and host.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/log.h"
#include "cmd/logs/log_reader.h"
#include "tests/util/launcher_argv.h"
#include "tests/util/subprocess.h"
#include "tests/util/wait_until.h"

namespace fabps::logs {
namespace {

using testing::Subprocess;
using testing::TempDir;

std::string Host() {
  char buf[256] = {};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

TEST(ParseLogLine, TextLines) {
  auto l = ParseLogLine(
      "I 2026-12-04 14:27:40.394 pserver-1@node7 main.cc:178] claimed");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->role, "pserver");
  EXPECT_EQ(l->index, 1);
  EXPECT_EQ(l->host, "node7");
  EXPECT_EQ(l->time_ms % 1000, 394);
  auto m =
      ParseLogLine("W 2026-12-04 14:27:40.395 convert-records@n x.cc:1] y");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->role, "convert-records");
  EXPECT_EQ(m->index, -1);
  EXPECT_EQ(m->time_ms - l->time_ms, 1);
  for (const char* bad :
       {"", "pass 1/2 [####] 16/16 tasks", "I 2026-12-04 14:27:40.394",
        "X 2026-12-04 14:27:40.394 a@b f.cc:1] m",
        "I 2026-13-04 14:27:40.394 a@b f.cc:1] m",
        "I 2026-12-04 14:27:40.394 nohost f.cc:1] m", "{\"time\": 3}",
        "{not json"}) {
    EXPECT_FALSE(ParseLogLine(bad)) << bad;
  }
}

TEST(ParseLogLine, JsonLines) {
  auto l = ParseLogLine(
      R"({"time":"2026-12-04T13:27:40.394Z","level":"info","role":"trainer",)"
      R"("index":0,"host":"n1","src":"a.cc:3","msg":"x \"y\""})");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->role, "trainer");
  EXPECT_EQ(l->index, 0);
  EXPECT_EQ(l->host, "n1");
  EXPECT_EQ(l->time_ms, int64_t{1796390860} * 1000 + 394);
}

TEST(JsonQuote, EscapesWhatJsonNeeds) {
  std::string raw = "a\"b\\c\n\x01\t d";
  std::string q = JsonQuote(raw);
  EXPECT_EQ(q, "\"a\\\"b\\\\c\\n\\u0001\\t d\"");
  EXPECT_EQ(nlohmann::json::parse(q).get<std::string>(), raw);
}

TEST(RoleOfLogFile, FromTheLaunchersNames) {
  std::string role;
  int index;
  RoleOfLogFile("pserver-1.log", &role, &index);
  EXPECT_EQ(role, "pserver");
  EXPECT_EQ(index, 1);
  RoleOfLogFile("master-standby.log", &role, &index);
  EXPECT_EQ(role, "master");
  EXPECT_EQ(index, -1);
  RoleOfLogFile("etcd.log", &role, &index);
  EXPECT_EQ(role, "etcd");
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app) << text;
}

TEST(RunDirLogs, MergesByTimeKeepsUntimedLinesInPlaceAndFilters) {
  TempDir d;
  Write(d.File("pserver-0.log"),
        "I 2026-12-04 10:00:00.100 pserver-0@h a.cc:1] p0 first\n"
        "a line of its own after p0 first\n"
        "I 2026-12-04 10:00:00.300 pserver-0@h a.cc:1] p0 second\n");
  Write(d.File("trainer-0.log"),
        "I 2026-12-04 10:00:00.050 trainer-0@h a.cc:1] t0 first\n"
        "I 2026-12-04 10:00:00.200 trainer-0@h a.cc:1] t0 second\n"
        "no newline at the end");
  Write(d.File("notes.txt"), "not a log\n");
  auto logs = RunDirLogs::Open(d.path(), {});
  ASSERT_TRUE(logs.ok());
  std::vector<std::string> got;
  std::string file;
  while (auto l = (*logs)->Next(&file, /*drain=*/true)) {
    size_t msg = l->text.find("] ");  // the message of a log line
    got.push_back(
        file + ": " +
        (msg == std::string::npos ? l->text : l->text.substr(msg + 2)));
  }
  std::vector<std::string> want = {
      "trainer-0.log: t0 first",
      "pserver-0.log: p0 first",
      "pserver-0.log: a line of its own after p0 first",
      "trainer-0.log: t0 second",
      "trainer-0.log: no newline at the end",
      "pserver-0.log: p0 second"};
  EXPECT_EQ(got, want);

  auto only = RunDirLogs::Open(d.path(), {"pserver", 0});
  ASSERT_TRUE(only.ok());
  int n = 0;
  while (auto l = (*only)->Next(&file, true)) {
    EXPECT_EQ(file, "pserver-0.log");
    n++;
  }
  EXPECT_EQ(n, 3);
  EXPECT_FALSE(RunDirLogs::Open(d.File("none"), {}).ok());
}

TEST(FabpsLogs, FollowsLinesAsTheyAreWritten) {
  TempDir d;
  std::filesystem::create_directories(d.File("run"));
  Write(d.File("run/master.log"),
        "I 2026-12-04 10:00:00.100 master@h a.cc:1] before\n");
  auto p = Subprocess::Start({testing::BuiltBinary("cmd/logs/fabps-logs"),
                              d.File("run"), "--follow", "--poll-ms", "20"},
                             d.File("out"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto has = [&](const std::string& s) {
    return testing::ReadFileOrEmpty(d.File("out")).find(s) != std::string::npos;
  };
  EXPECT_TRUE(
      testing::WaitUntil([&] { return has("before"); }, Deadline::InMs(20000)));
  Write(d.File("run/pserver-2.log"), "I 2026-12-04 10:00:01.000 pserver-2@h ");
  Write(d.File("run/pserver-2.log"), "a.cc:1] a new file's line\n");
  EXPECT_TRUE(testing::WaitUntil([&] { return has("a new file's line"); },
                                 Deadline::InMs(20000)));
  Write(d.File("run/master.log"), "appended later\n");
  EXPECT_TRUE(testing::WaitUntil([&] { return has("appended later"); },
                                 Deadline::InMs(20000)));
  auto st = p->Stop(5000);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << *st;
  std::string out = testing::ReadFileOrEmpty(d.File("out"));
  EXPECT_NE(out.find("pserver-2      | I 2026-12-04 10:00:01.000 pserver-2@h "
                     "a.cc:1] a new file's line\n"),
            std::string::npos)
      << out;
}

// Runs a one-pass launcher job into dir/run; false (with its output) when
// it fails.
::testing::AssertionResult RunJob(const TempDir& dir,
                                  const std::vector<std::string>& extra) {
  std::vector<std::string> argv =
      testing::LauncherArgv(dir, testing::LauncherJob{}, extra);
  auto p = Subprocess::Start(argv, dir.File("launch.out"));
  if (!p.ok()) return ::testing::AssertionFailure() << p.status().ToString();
  auto st = p->Wait(240000);
  if (!st.ok() || !WIFEXITED(*st) || WEXITSTATUS(*st) != 0)
    return ::testing::AssertionFailure()
           << testing::ReadFileOrEmpty(dir.File("launch.out"));
  return ::testing::AssertionSuccess();
}

// fabps-logs' output for `args`.
std::string Logs(const TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {testing::BuiltBinary("cmd/logs/fabps-logs"),
                                   dir.File("run")};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out = dir.File("logs.out");
  ::unlink(out.c_str());
  auto p = Subprocess::Start(argv, out);
  EXPECT_TRUE(p.ok());
  if (!p.ok()) return "";
  auto st = p->Wait(60000);
  EXPECT_TRUE(st.ok() && WIFEXITED(*st) && WEXITSTATUS(*st) == 0);
  return testing::ReadFileOrEmpty(out);
}

struct Merged {
  std::map<std::string, int> lines_of_file;  // parsed lines per file
  std::set<std::string> whos;                // role-index@host seen
  bool in_order = true;
  int parsed = 0;
};

Merged Check(const std::string& out) {
  Merged m;
  int64_t last = 0;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    size_t bar = line.find(" | ");
    EXPECT_NE(bar, std::string::npos) << line;
    if (bar == std::string::npos) continue;
    std::string file = line.substr(0, line.find(' '));
    auto l = ParseLogLine(line.substr(bar + 3));
    if (!l) continue;
    m.parsed++;
    m.lines_of_file[file]++;
    m.whos.insert(l->role +
                  (l->index >= 0 ? "-" + std::to_string(l->index) : "") + "@" +
                  l->host);
    if (l->time_ms < last) m.in_order = false;
    last = l->time_ms;
  }
  return m;
}

void ExpectAJobsLogs(const TempDir& dir) {
  Merged all = Check(Logs(dir, {}));
  EXPECT_TRUE(all.in_order);
  for (const char* f :
       {"master", "pserver-0", "pserver-1", "trainer-0", "trainer-1"})
    EXPECT_GT(all.lines_of_file[f], 0) << f;
  const std::string host = Host();
  for (const std::string who :
       {"master@", "pserver-0@", "pserver-1@", "trainer-0@", "trainer-1@"})
    EXPECT_EQ(all.whos.count(who + host), 1u) << who << host;

  Merged one = Check(Logs(dir, {"--role", "pserver", "--index", "1"}));
  EXPECT_TRUE(one.in_order);
  EXPECT_GT(one.parsed, 0);
  EXPECT_EQ(one.lines_of_file.size(), 1u);
  EXPECT_GT(one.lines_of_file["pserver-1"], 0);
  for (const std::string& w : one.whos)
    EXPECT_TRUE(w == "pserver-1@" + host || w == "pserver@" + host) << w;
}

TEST(FabpsLogs, MergesARealJobsTextLogs) {
  TempDir dir;
  ASSERT_TRUE(RunJob(dir, {}));
  std::string p1 = testing::ReadFileOrEmpty(dir.File("run/pserver-1.log"));
  EXPECT_NE(p1.find(" pserver-1@" + Host() + " "), std::string::npos) << p1;
  ExpectAJobsLogs(dir);
}

TEST(FabpsLogs, MergesARealJobsJsonLogs) {
  TempDir dir;
  ASSERT_TRUE(RunJob(dir, {"--log-format", "json"}));
  // Every daemon line is a JSON object naming its process.
  std::istringstream in(
      testing::ReadFileOrEmpty(dir.File("run/pserver-0.log")));
  int json = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    auto l = ParseLogLine(line);
    ASSERT_TRUE(l) << line;
    EXPECT_EQ(l->role, "pserver");
    json++;
  }
  EXPECT_GT(json, 0);
  ExpectAJobsLogs(dir);
}

}  // namespace
}  // namespace fabps::logs
