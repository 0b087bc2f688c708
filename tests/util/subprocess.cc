#include "tests/util/subprocess.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fabps::testing {

Result<Subprocess> Subprocess::Start(const std::vector<std::string>& argv,
                                     const std::string& log_path,
                                     const std::vector<std::string>& env) {
  SpawnOptions o;
  o.argv = argv;
  o.env = env;
  o.log_path = log_path;
  FABPS_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(o));
  return Subprocess(std::move(child));
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

Result<Exited> RunToExit(const std::vector<std::string>& argv,
                         const std::string& log_path, int timeout_ms) {
  ::unlink(log_path.c_str());
  FABPS_ASSIGN_OR_RETURN(Subprocess p, Subprocess::Start(argv, log_path));
  Result<int> st = p.Wait(timeout_ms);
  if (!st.ok()) {
    return Status::TimedOut(argv[0] + " still running after " +
                            std::to_string(timeout_ms) + " ms");
  }
  Exited e;
  e.code = WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
  e.output = ReadFileOrEmpty(log_path);
  return e;
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
