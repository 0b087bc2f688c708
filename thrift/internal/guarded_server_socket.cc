#include "thrift/internal/guarded_server_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <thrift/transport/TTransportException.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <utility>

#include "base/log.h"
#include "thrift/internal/guarded_socket.h"

namespace fabps::rpc::internal {

using apache::thrift::TConfiguration;
using apache::thrift::transport::TNonblockingServerSocket;
using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransportException;

GuardedServerSocket::GuardedServerSocket(const std::string& host, int port,
                                         size_t max_frame_bytes,
                                         std::shared_ptr<ConnectionGuard> guard,
                                         std::shared_ptr<TlsContext> tls)
    : TNonblockingServerSocket(host, port),
      guard_(std::move(guard)),
      tls_(std::move(tls)),
      // TNonblockingServer reads a frame's body in one read() call, which
      // TSocket refuses past its maximum message size (100 MiB by
      // default): let it be the frame limit.
      socket_config_(
          std::make_shared<TConfiguration>(static_cast<int>(max_frame_bytes),
                                           static_cast<int>(max_frame_bytes))) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   pair) != 0) {
    throw TTransportException(TTransportException::UNKNOWN, "socketpair",
                              errno);
  }
  ::close(pair[1]);
  dead_end_fd_ = pair[0];
}

GuardedServerSocket::~GuardedServerSocket() {
  if (spare_fd_ >= 0) ::close(spare_fd_);
  ::close(dead_end_fd_);
}

std::shared_ptr<TSocket> GuardedServerSocket::acceptImpl() {
  if (spare_fd_ < 0) spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  int listen_fd = getSocketFD();
  int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
  int err = errno;
  bool refused = false;
  if (fd < 0 && (err == EMFILE || err == ENFILE) && spare_fd_ >= 0) {
    ::close(spare_fd_);
    spare_fd_ = -1;
    len = sizeof(addr);
    fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len,
                   SOCK_NONBLOCK | SOCK_CLOEXEC);
    refused = true;
  }
  std::shared_ptr<GuardedSocket> socket;
  if (fd >= 0) {
    socket = std::make_shared<GuardedSocket>(fd, guard_, socket_config_);
    socket->SetPeer(reinterpret_cast<sockaddr*>(&addr), len);
    if (tls_ != nullptr && !refused) {
      std::string why;
      std::unique_ptr<TlsSession> session =
          TlsSession::Make(*tls_, fd, "", &why);
      if (session == nullptr) {
        FABPS_LOG(WARNING) << "rpc server: " << why;
        refused = true;
      }
      socket->SetTls(std::move(session));
    }
  } else {
    if (err == EMFILE || err == ENFILE) {
      // The peer stays queued and the listener ready: do not spin on it
      // while descriptors are short.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    socket =
        std::make_shared<GuardedSocket>(dead_end_fd_, guard_, socket_config_,
                                        /*shared_fd=*/true);
    refused = true;
  }
  guard_->Admit(socket->state(), refused);
  return socket;
}

}  // namespace fabps::rpc::internal
