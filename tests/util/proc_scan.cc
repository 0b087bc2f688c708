#include "tests/util/proc_scan.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "tests/util/subprocess.h"

namespace fabps::testing {
namespace {

// "/proc/<pid>/stat" says state Z after the command's closing parenthesis.
bool Zombie(const std::string& stat) {
  return stat.find(") Z") != std::string::npos;
}

}  // namespace

std::vector<int> LiveProcesses(const std::string& program,
                               const std::string& needle) {
  std::vector<int> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    const std::string dir = "/proc/" + std::string(e->d_name);
    // ReadFileOrEmpty: "" when the process is gone, never an exception.
    const std::string cmd = ReadFileOrEmpty(dir + "/cmdline");
    const std::string argv0 = cmd.substr(0, cmd.find('\0'));
    if (cmd.empty() || cmd.find(needle) == std::string::npos) continue;
    if (argv0.size() < program.size() ||
        argv0.compare(argv0.size() - program.size(), program.size(), program) !=
            0) {
      continue;
    }
    const std::string stat = ReadFileOrEmpty(dir + "/stat");
    if (!stat.empty() && !Zombie(stat)) out.push_back(pid);
  }
  closedir(d);
  return out;
}

namespace {

// One thread's /proc/<pid>/task/<tid>/stat: "tid (comm) state ppid ...".
struct ThreadStat {
  std::string name;
  std::vector<std::string> rest;  // the fields after the closing parenthesis
};

// The stat lines of the threads of `pid`; threads that end meanwhile are
// left out, and a process that is gone has none.
std::vector<ThreadStat> ThreadStats(int pid) {
  std::vector<ThreadStat> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (std::atoi(e->d_name) <= 0) continue;
    const std::string stat =
        ReadFileOrEmpty(dir + "/" + std::string(e->d_name) + "/stat");
    const size_t open = stat.find('(');
    const size_t close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    ThreadStat t;
    t.name = stat.substr(open + 1, close - open - 1);
    std::istringstream rest(stat.substr(close + 1));
    for (std::string field; rest >> field;) t.rest.push_back(field);
    out.push_back(std::move(t));
  }
  closedir(d);
  return out;
}

}  // namespace

std::vector<std::string> ThreadNames(int pid) {
  std::vector<std::string> out;
  for (const ThreadStat& t : ThreadStats(pid)) out.push_back(t.name);
  return out;
}

double ThreadCpuSeconds(int pid, const std::string& name) {
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  double total = 0;
  for (const ThreadStat& t : ThreadStats(pid)) {
    // utime and stime are fields 14 and 15 of stat: the 12th and 13th after
    // the closing parenthesis.
    if (t.name != name || t.rest.size() < 13) continue;
    total +=
        (std::atof(t.rest[11].c_str()) + std::atof(t.rest[12].c_str())) / ticks;
  }
  return total;
}

bool AllThreadsStopped(int pid) {
  const std::vector<ThreadStat> threads = ThreadStats(pid);
  for (const ThreadStat& t : threads) {
    // The state is the first field after the closing parenthesis.
    if (t.rest.empty() || (t.rest[0] != "T" && t.rest[0] != "t")) return false;
  }
  return !threads.empty();
}

bool ProcessAlive(int pid) {
  const std::string stat =
      ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  return !stat.empty() && !Zombie(stat);
}

}  // namespace fabps::testing
