#include "thrift/internal/guarded_socket.h"

#include <thrift/transport/TTransportException.h>

#include <string>
#include <utility>

namespace fabps::rpc::internal {

using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransportException;

GuardedSocket::GuardedSocket(
    int fd, std::shared_ptr<ConnectionGuard> guard,
    std::shared_ptr<apache::thrift::TConfiguration> config, bool shared_fd)
    : TSocket(fd, std::move(config)),
      guard_(std::move(guard)),
      shared_fd_(shared_fd),
      state_(fd) {}

GuardedSocket::~GuardedSocket() {
  guard_->Forget(&state_);
  tls_.reset();
  if (shared_fd_) socket_ = THRIFT_INVALID_SOCKET;  // ~TSocket closes it
}

void GuardedSocket::SetPeer(const sockaddr* addr, socklen_t len) {
  setCachedAddress(addr, len);
  state_.set_peer(getPeerAddress() + ":" + std::to_string(getPeerPort()));
}

uint32_t GuardedSocket::read(uint8_t* buf, uint32_t len) {
  if (state_.closing()) return 0;
  uint32_t n = tls_ ? TlsRead(buf, len) : TSocket::read(buf, len);
  if (n > 0 && !guard_->OnRead(&state_, buf, n)) return 0;
  return n;
}

uint32_t GuardedSocket::write_partial(const uint8_t* buf, uint32_t len) {
  guard_->OnWriteBegin(&state_);
  uint32_t n = tls_ ? TlsWrite(buf, len) : TSocket::write_partial(buf, len);
  if (n > 0 && guard_->OnWritten(&state_, buf, n) && tls_ &&
      tls_->Pending() > 0) {
    // The reply is out and the peer's next request already sits decrypted
    // in the session: TNonblockingServer now waits for the socket, which
    // stays quiet, so it would never be read.
    guard_->DropPipelinedTls(&state_);
  }
  return n;
}

bool GuardedSocket::hasPendingDataToRead() {
  return tls_ ? tls_->Pending() > 0 : TSocket::hasPendingDataToRead();
}

void GuardedSocket::close() {
  guard_->Forget(&state_);  // before the fd can be reused
  if (tls_) {
    tls_->Shutdown();
    tls_.reset();
  }
  if (shared_fd_) {
    socket_ = THRIFT_INVALID_SOCKET;
    return;
  }
  TSocket::close();
}

// TNonblockingServer takes an exception whose text has "retry" as "wait for
// the socket and call again"; a 0 as the end of the connection.
uint32_t GuardedSocket::TlsRead(uint8_t* buf, uint32_t len) {
  uint32_t n = 0;
  switch (tls_->Read(buf, len, &n)) {
    case TlsSession::Io::kOk:
      return n;
    case TlsSession::Io::kWantRead:
    case TlsSession::Io::kWantWrite:
      throw TTransportException(TTransportException::UNKNOWN, "tls: retry");
    case TlsSession::Io::kClosed:
      return 0;
    case TlsSession::Io::kError:
      guard_->OnTlsFailure(&state_, tls_->error());
      return 0;
  }
  return 0;
}

uint32_t GuardedSocket::TlsWrite(const uint8_t* buf, uint32_t len) {
  uint32_t n = 0;
  switch (tls_->Write(buf, len, &n)) {
    case TlsSession::Io::kOk:
      return n;
    case TlsSession::Io::kWantRead:
    case TlsSession::Io::kWantWrite:
      return 0;  // the server waits for the socket to drain
    default:
      throw TTransportException(TTransportException::END_OF_FILE,
                                "tls: " + tls_->error());
  }
}

}  // namespace fabps::rpc::internal
