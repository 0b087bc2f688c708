#include "tests/util/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/shm_regions.h"

namespace fabps::testing {

Result<Subprocess> Subprocess::Start(const std::vector<std::string>& argv,
                                     const std::string& log_path,
                                     const std::vector<std::string>& env) {
  if (argv.empty())
    return Status::InvalidArgument("Subprocess::Start: empty argv");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int log_fd = -1;
  if (!log_path.empty()) {
    log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                    0644);
    if (log_fd < 0) return PosixError("open " + log_path, errno);
  }
  // PR_SET_PDEATHSIG fires when the forking *thread* ends, so it is only
  // safe when the main thread starts the child.
  const bool from_main_thread =
      ::getpid() == static_cast<pid_t>(::syscall(SYS_gettid));
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    if (log_fd >= 0) ::close(log_fd);
    return PosixError("fork", err);
  }
  if (pid == 0) {
    // Die with the test: a test killed on timeout leaves no peer behind.
    if (from_main_thread) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (log_fd >= 0) {
      ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
    }
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    ::execv(args[0], args.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  if (log_fd >= 0) ::close(log_fd);
  Subprocess p;
  p.pid_ = pid;
  p.log_path_ = log_path;
  return p;
}

Subprocess::Subprocess(Subprocess&& o) noexcept { *this = std::move(o); }

Subprocess& Subprocess::operator=(Subprocess&& o) noexcept {
  if (this != &o) {
    Kill();
    pid_ = o.pid_;
    wait_status_ = o.wait_status_;
    exited_ = o.exited_;
    log_path_ = std::move(o.log_path_);
    o.pid_ = -1;
  }
  return *this;
}

Subprocess::~Subprocess() { Kill(); }

bool Subprocess::running() {
  if (pid_ < 0 || exited_) return false;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    Reaped(st);
    return false;
  }
  return true;
}

void Subprocess::Reaped(int status) {
  exited_ = true;
  wait_status_ = status;
  // A child killed by a signal leaves its shm regions (base/shm_regions.h).
  if (WIFSIGNALED(status)) RemoveShmRegionsOf(pid_);
}

Status Subprocess::Signal(int sig) {
  if (!running()) return Status::FailedPrecondition("process not running");
  if (::kill(pid_, sig) != 0) return PosixError("kill", errno);
  return Status::OK();
}

Result<int> Subprocess::Wait(int timeout_ms) {
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
  return wait_status_;
}

Result<int> Subprocess::Stop(int grace_ms) {
  if (running()) ::kill(pid_, SIGTERM);
  auto r = Wait(grace_ms);
  if (r.ok()) return r;
  Kill();
  return Wait(5000);
}

void Subprocess::Kill() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    if (::waitpid(pid_, &st, 0) == pid_) Reaped(st);
  }
}

int FreeTcpPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  int port = -1;
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp ? tmp : "/tmp") + "/fabps-test-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    std::fprintf(stderr, "mkdtemp %s: %s\n", templ.c_str(),
                 std::strerror(errno));
    std::abort();
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  if (std::getenv("FABPS_KEEP_TEST_DIRS") != nullptr) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string BuiltBinary(const std::string& relative) {
#ifdef FABPS_BINARY_DIR
  return std::string(FABPS_BINARY_DIR) + "/" + relative;
#else
  return relative;
#endif
}

}  // namespace fabps::testing
