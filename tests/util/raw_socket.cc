#include "tests/util/raw_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace fabps::testing {
namespace {

using Clock = std::chrono::steady_clock;

int MsLeft(Clock::time_point end) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now())
          .count();
  return left > 0 ? static_cast<int>(left) : 0;
}

}  // namespace

Result<RawSocket> RawSocket::Connect(const std::string& host, int port,
                                     int timeout_ms) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
    return Status::InvalidArgument("not an IPv4 address: " + host);
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return PosixError("socket", errno);
  RawSocket s(fd);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    if (errno != EINPROGRESS) return PosixError("connect", errno);
    pollfd p{fd, POLLOUT, 0};
    int r = ::poll(&p, 1, timeout_ms);
    if (r == 0) return Status::TimedOut("connect: timed out");
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (r < 0 || err != 0) return PosixError("connect", r < 0 ? errno : err);
  }
  // Blocking from here on; every wait below polls with a deadline.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return s;
}

RawSocket::RawSocket(RawSocket&& o) noexcept { *this = std::move(o); }

RawSocket& RawSocket::operator=(RawSocket&& o) noexcept {
  if (this != &o) {
    Close();
    fd_ = o.fd_;
    pending_ = std::move(o.pending_);
    o.fd_ = -1;
  }
  return *this;
}

RawSocket::~RawSocket() { Close(); }

Status RawSocket::Send(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n =
        ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable(std::string("send: ") + std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
  return Status::OK();
}

void RawSocket::ShutdownWrite() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void RawSocket::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

RawSocket::Outcome RawSocket::WaitForFrameOrClose(int timeout_ms,
                                                  std::string* frame) {
  auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (pending_.size() >= 4) {
      uint32_t be;
      std::memcpy(&be, pending_.data(), 4);
      size_t len = ntohl(be);
      if (pending_.size() >= 4 + len) {
        if (frame) *frame = pending_.substr(4, len);
        pending_.erase(0, 4 + len);
        return Outcome::kReply;
      }
    }
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, MsLeft(end));
    if (r == 0) return Outcome::kTimedOut;
    if (r < 0 && errno == EINTR) continue;
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Outcome::kClosed;  // end, or a reset
    pending_.append(buf, static_cast<size_t>(n));
  }
}

bool RawSocket::WaitClosed(int timeout_ms) {
  auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, MsLeft(end));
    if (r == 0) return false;
    if (r < 0 && errno == EINTR) continue;
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
  }
}

const char* OutcomeName(RawSocket::Outcome o) {
  switch (o) {
    case RawSocket::Outcome::kClosed:
      return "closed";
    case RawSocket::Outcome::kReply:
      return "reply";
    case RawSocket::Outcome::kTimedOut:
      return "timed out";
  }
  return "?";
}

SilentListener::SilentListener() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
      ::listen(fd_, 16) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return;
  }
  port_ = ntohs(a.sin_port);
}

SilentListener::~SilentListener() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace fabps::testing
