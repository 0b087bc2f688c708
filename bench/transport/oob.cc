#include "bench/transport/oob.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/deadline.h"

namespace fabps::bench {
namespace {

constexpr uint32_t kMaxMsg = 1 << 20;

Result<sockaddr_in> Resolve(const std::string& host, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) == 1) return a;
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
    return Status::InvalidArgument("cannot resolve host '" + host + "'");
  }
  a.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return a;
}

Status WaitFd(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int r = ::poll(&p, 1, timeout_ms);
  if (r < 0) return PosixError("poll", errno);
  if (r == 0) return Status::TimedOut("out-of-band channel: peer silent");
  return Status::OK();
}

}  // namespace

OobChannel& OobChannel::operator=(OobChannel&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

OobChannel::~OobChannel() {
  if (fd_ >= 0) ::close(fd_);
}

Result<OobChannel> OobChannel::Accept(const std::string& host, int port,
                                      int timeout_ms,
                                      void (*on_listen)(int port)) {
  FABPS_ASSIGN_OR_RETURN(sockaddr_in a, Resolve(host, port));
  int ls = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) return PosixError("socket", errno);
  int one = 1;
  ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(ls, 1) != 0) {
    int err = errno;
    ::close(ls);
    return PosixError("bind/listen on " + host + ":" + std::to_string(port),
                      err);
  }
  socklen_t len = sizeof(a);
  ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len);
  if (on_listen) on_listen(ntohs(a.sin_port));
  Status s = WaitFd(ls, POLLIN, timeout_ms);
  if (!s.ok()) {
    ::close(ls);
    return s.WithContext("waiting for the client");
  }
  int fd = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
  int err = errno;
  ::close(ls);
  if (fd < 0) return PosixError("accept", err);
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return OobChannel(fd);
}

Result<OobChannel> OobChannel::Connect(const std::string& host, int port,
                                       int timeout_ms) {
  FABPS_ASSIGN_OR_RETURN(sockaddr_in a, Resolve(host, port));
  Deadline deadline = Deadline::InMs(timeout_ms);
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return PosixError("socket", errno);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return OobChannel(fd);
    }
    int err = errno;
    ::close(fd);
    if (deadline.Expired()) {
      return PosixError("connect to " + host + ":" + std::to_string(port), err);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Status OobChannel::WriteAll(const void* p, size_t n, int timeout_ms) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    FABPS_RETURN_IF_ERROR(WaitFd(fd_, POLLOUT, timeout_ms));
    ssize_t w = ::send(fd_, c, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return PosixError("out-of-band send", errno);
    }
    c += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Status OobChannel::ReadAll(void* p, size_t n, int timeout_ms) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    FABPS_RETURN_IF_ERROR(WaitFd(fd_, POLLIN, timeout_ms));
    ssize_t r = ::recv(fd_, c, n, 0);
    if (r == 0)
      return Status::Unavailable("out-of-band channel closed by the peer");
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return PosixError("out-of-band recv", errno);
    }
    c += r;
    n -= static_cast<size_t>(r);
  }
  return Status::OK();
}

Status OobChannel::SendMsg(const std::string& msg, int timeout_ms) {
  if (msg.size() > kMaxMsg)
    return Status::InvalidArgument("out-of-band message too long");
  uint32_t n = htonl(static_cast<uint32_t>(msg.size()));
  FABPS_RETURN_IF_ERROR(WriteAll(&n, 4, timeout_ms));
  return WriteAll(msg.data(), msg.size(), timeout_ms);
}

Result<std::string> OobChannel::RecvMsg(int timeout_ms) {
  uint32_t n = 0;
  FABPS_RETURN_IF_ERROR(ReadAll(&n, 4, timeout_ms));
  n = ntohl(n);
  if (n > kMaxMsg)
    return Status::Corruption("out-of-band message of " + std::to_string(n) +
                              " bytes");
  std::string s(n, '\0');
  FABPS_RETURN_IF_ERROR(ReadAll(s.data(), n, timeout_ms));
  return s;
}

Status OobChannel::Barrier(int timeout_ms) {
  FABPS_RETURN_IF_ERROR(SendMsg("sync", timeout_ms));
  FABPS_ASSIGN_OR_RETURN(std::string m, RecvMsg(timeout_ms));
  if (m != "sync")
    return Status::Corruption("out-of-band barrier: unexpected '" + m + "'");
  return Status::OK();
}

}  // namespace fabps::bench
