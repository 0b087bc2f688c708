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

std::vector<std::string> ThreadNames(int pid) {
  std::vector<std::string> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (std::atoi(e->d_name) <= 0) continue;
    std::string name =
        ReadFileOrEmpty(dir + "/" + std::string(e->d_name) + "/comm");
    if (name.empty()) continue;  // the thread ended meanwhile
    if (name.back() == '\n') name.pop_back();
    out.push_back(name);
  }
  closedir(d);
  return out;
}

double ThreadCpuSeconds(int pid, const std::string& name) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  double total = 0;
  while (dirent* e = readdir(d)) {
    if (std::atoi(e->d_name) <= 0) continue;
    // "tid (comm) state ppid ..." : utime and stime are fields 14 and 15,
    // the 12th and 13th after the closing parenthesis.
    const std::string stat =
        ReadFileOrEmpty(dir + "/" + std::string(e->d_name) + "/stat");
    const size_t open = stat.find('(');
    const size_t close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    if (stat.substr(open + 1, close - open - 1) != name) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 1; i <= 13 && rest >> field; i++) {
      if (i == 12) utime = std::atof(field.c_str());
      if (i == 13) stime = std::atof(field.c_str());
    }
    total += (utime + stime) / ticks;
  }
  closedir(d);
  return total;
}

bool ProcessAlive(int pid) {
  const std::string stat =
      ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  return !stat.empty() && !Zombie(stat);
}

}  // namespace fabps::testing
