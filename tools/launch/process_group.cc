#include "tools/launch/process_group.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
#include <thread>

#include "base/shm_regions.h"

namespace fabps::launch {

Status ProcessGroup::Start(const std::string& name,
                           const std::vector<std::string>& argv,
                           const std::string& log) {
  if (argv.empty()) return Status::InvalidArgument("empty command for " + name);
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return PosixError("open " + log, errno);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(fd);
    return PosixError("fork", err);
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the launcher died already
    ::setpgid(0, 0);  // Ctrl-C reaches the launcher only; it stops us in order
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execv(args[0], args.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(fd);
  Child& c = children_[name];
  c.name = name;
  c.argv = argv;
  c.log = log;
  c.pid = pid;
  c.running = true;
  c.wait_status = 0;
  c.killed_on_purpose = false;
  return Status::OK();
}

Status ProcessGroup::Restart(const std::string& name) {
  Child* c = Find(name);
  if (c == nullptr) return Status::NotFound(name);
  std::vector<std::string> argv = c->argv;
  std::string log = c->log;
  return Start(name, argv, log);
}

namespace {
// A child killed by a signal leaves its shm regions (base/shm_regions.h).
void Cleanup(const Child& c) {
  if (WIFSIGNALED(c.wait_status)) RemoveShmRegionsOf(c.pid);
}
}  // namespace

std::vector<std::string> ProcessGroup::Reap() {
  std::vector<std::string> out;
  for (auto& [name, c] : children_) {
    if (!c.running) continue;
    int st = 0;
    if (::waitpid(c.pid, &st, WNOHANG) == c.pid) {
      c.running = false;
      Cleanup(c);
      c.wait_status = st;
      out.push_back(name);
    }
  }
  return out;
}

Child* ProcessGroup::Find(const std::string& name) {
  auto it = children_.find(name);
  return it == children_.end() ? nullptr : &it->second;
}

void ProcessGroup::Kill(const std::string& name) {
  Child* c = Find(name);
  if (c == nullptr || !c->running) return;
  c->killed_on_purpose = true;
  ::kill(c->pid, SIGKILL);
  ::waitpid(c->pid, &c->wait_status, 0);
  c->running = false;
  Cleanup(*c);
}

void ProcessGroup::Stop(const std::string& name, int grace_ms) {
  Child* c = Find(name);
  if (c == nullptr || !c->running) return;
  c->killed_on_purpose = true;
  ::kill(c->pid, SIGTERM);
  auto end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (::waitpid(c->pid, &c->wait_status, WNOHANG) == c->pid) {
      c->running = false;
      Cleanup(*c);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Kill(name);
}

void ProcessGroup::StopAll(int grace_ms) {
  for (auto& [name, c] : children_) {
    if (c.running) {
      c.killed_on_purpose = true;
      ::kill(c.pid, SIGTERM);
    }
  }
  auto end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (auto& [name, c] : children_) {
    while (c.running && std::chrono::steady_clock::now() < end) {
      if (::waitpid(c.pid, &c.wait_status, WNOHANG) == c.pid) {
        c.running = false;
        Cleanup(c);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (c.running) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &c.wait_status, 0);
      c.running = false;
      Cleanup(c);
    }
  }
}

std::string TailOfFile(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += "    " + l + "\n";
  return out;
}

}  // namespace fabps::launch
