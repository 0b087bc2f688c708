#include "base/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "base/shm_regions.h"

extern char** environ;

namespace fabps {
namespace {

// The inherited environment with `extra` added; an extra entry replaces an
// inherited one of the same name.
std::vector<std::string> MergedEnvironment(
    const std::vector<std::string>& extra) {
  auto name_of = [](const std::string& e) { return e.substr(0, e.find('=')); };
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry = *e;
    bool replaced = false;
    for (const std::string& x : extra) {
      if (name_of(x) == name_of(entry)) replaced = true;
    }
    if (!replaced) out.push_back(std::move(entry));
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

}  // namespace

Result<ChildProcess> ChildProcess::Spawn(const SpawnOptions& o) {
  if (o.argv.empty()) return Status::InvalidArgument("spawn: empty argv");
  // Everything the child needs is prepared before fork: between fork and
  // exec only async-signal-safe calls are made.
  std::vector<std::string> env_strings = MergedEnvironment(o.env);
  std::vector<char*> args;
  for (const std::string& a : o.argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  int log_fd = -1;
  if (!o.log_path.empty()) {
    int mode = o.truncate_log ? O_TRUNC : O_APPEND;
    log_fd =
        ::open(o.log_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | mode, 0644);
    if (log_fd < 0) return PosixError("open " + o.log_path, errno);
  }
  int null_fd = -1;
  if (o.stdin_from_dev_null) {
    null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0) {
      int err = errno;
      if (log_fd >= 0) ::close(log_fd);
      return PosixError("open /dev/null", err);
    }
  }
  const bool from_main_thread =
      ::getpid() == static_cast<pid_t>(::syscall(SYS_gettid));
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    if (log_fd >= 0) ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return PosixError("fork", err);
  }
  if (pid == 0) {
    if (o.die_with_parent && from_main_thread) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the parent died already
    }
    if (o.own_process_group) ::setpgid(0, 0);
    if (log_fd >= 0) {
      ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
    }
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::execve(args[0], args.data(), envp.data());
    const char* why = std::strerror(errno);
    (void)!::write(STDERR_FILENO, "exec ", 5);
    (void)!::write(STDERR_FILENO, args[0], std::strlen(args[0]));
    (void)!::write(STDERR_FILENO, ": ", 2);
    (void)!::write(STDERR_FILENO, why, std::strlen(why));
    (void)!::write(STDERR_FILENO, "\n", 1);
    ::_exit(127);
  }
  if (log_fd >= 0) ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  ChildProcess c;
  c.pid_ = pid;
  c.log_path_ = o.log_path;
  return c;
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept { *this = std::move(o); }

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    Kill();
    pid_ = o.pid_;
    exited_ = o.exited_;
    wait_status_ = o.wait_status_;
    log_path_ = std::move(o.log_path_);
    o.pid_ = -1;
    o.exited_ = false;
  }
  return *this;
}

ChildProcess::~ChildProcess() { Kill(); }

bool ChildProcess::running() {
  if (pid_ < 0 || exited_) return false;
  int st = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &st, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    Reaped(st);
    return false;
  }
  return r == 0;  // r < 0 (ECHILD): reaped elsewhere, not ours to wait for
}

void ChildProcess::Reaped(int status) {
  exited_ = true;
  wait_status_ = status;
  // A child killed by a signal leaves its shm regions (base/shm_regions.h).
  if (WIFSIGNALED(status)) RemoveShmRegionsOf(pid_);
}

Status ChildProcess::Signal(int sig) {
  if (!running()) return Status::FailedPrecondition("process not running");
  if (::kill(pid_, sig) != 0) return PosixError("kill", errno);
  return Status::OK();
}

Result<int> ChildProcess::Wait(int timeout_ms) {
  if (pid_ < 0) return Status::FailedPrecondition("no process");
  auto end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (running()) {
    if (std::chrono::steady_clock::now() >= end) {
      return Status::TimedOut("pid " + std::to_string(pid_) +
                              " still running after " +
                              std::to_string(timeout_ms) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!exited_) return Status::FailedPrecondition("process reaped elsewhere");
  return wait_status_;
}

Result<int> ChildProcess::Stop(int grace_ms) {
  if (running()) ::kill(pid_, SIGTERM);
  auto r = Wait(grace_ms);
  if (r.ok() || r.status().code() != Status::Code::kTimedOut) return r;
  Kill();
  return Wait(0);
}

void ChildProcess::Kill() {
  if (!running()) return;
  ::kill(pid_, SIGKILL);
  int st = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &st, 0);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) Reaped(st);
}

}  // namespace fabps
