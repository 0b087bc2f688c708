#include "thrift/tls_socket.h"

#include <fcntl.h>
#include <poll.h>

#include <chrono>

namespace fabps::rpc {

using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransportException;

TlsClientSocket::TlsClientSocket(
    std::shared_ptr<TlsContext> context, const std::string& host, int port,
    std::shared_ptr<apache::thrift::TConfiguration> config)
    : TSocket(host, port, std::move(config)), context_(std::move(context)) {}

TlsClientSocket::~TlsClientSocket() { close(); }

void TlsClientSocket::open() {
  TSocket::open();
  try {
    Handshake();
  } catch (...) {
    close();
    throw;
  }
}

// Non-blocking for the handshake, so that the whole of it (and the server's
// verdict on this client's certificate) fits in the connect timeout however
// the server trickles its bytes.
void TlsClientSocket::Handshake() {
  std::string why;
  tls_ = TlsSession::Make(*context_, socket_, host_, &why);
  if (tls_ == nullptr)
    throw TlsException(TTransportException::UNKNOWN, why, true);
  int flags = ::fcntl(socket_, F_GETFL);
  ::fcntl(socket_, F_SETFL, flags | O_NONBLOCK);
  using Clock = std::chrono::steady_clock;
  const int timeout_ms = connTimeout_ > 0 ? connTimeout_ : 10'000;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    TlsSession::Io io = tls_->Handshake();
    if (io == TlsSession::Io::kOk) io = tls_->Verdict();
    if (io == TlsSession::Io::kOk) break;
    if (io != TlsSession::Io::kWantRead && io != TlsSession::Io::kWantWrite) {
      Fail(io, "TLS handshake");
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - Clock::now())
                    .count();
    if (left <= 0) {
      throw TlsException(TTransportException::TIMED_OUT,
                         "TLS handshake with " + host_ + ":" +
                             std::to_string(port_) + " timed out",
                         false);
    }
    pollfd p{
        socket_,
        static_cast<short>(io == TlsSession::Io::kWantRead ? POLLIN : POLLOUT),
        0};
    ::poll(&p, 1, static_cast<int>(left));
  }
  ::fcntl(socket_, F_SETFL, flags);
}

void TlsClientSocket::Fail(TlsSession::Io io, const char* op) {
  if (io == TlsSession::Io::kClosed) {
    throw TlsException(TTransportException::END_OF_FILE,
                       std::string(op) + ": the server closed the connection",
                       false);
  }
  if (io == TlsSession::Io::kWantRead || io == TlsSession::Io::kWantWrite) {
    throw TlsException(TTransportException::TIMED_OUT,
                       std::string(op) + ": timed out", false);
  }
  throw TlsException(TTransportException::UNKNOWN, tls_->error(),
                     tls_->refused());
}

void TlsClientSocket::close() {
  if (tls_ != nullptr) {
    tls_->Shutdown();
    tls_.reset();
  }
  TSocket::close();
}

bool TlsClientSocket::peek() {
  if (tls_ == nullptr) return false;
  return tls_->Pending() > 0 || TSocket::peek();
}

uint32_t TlsClientSocket::read(uint8_t* buf, uint32_t len) {
  if (tls_ == nullptr) throw TTransportException(TTransportException::NOT_OPEN);
  uint32_t n = 0;
  TlsSession::Io io = tls_->Read(buf, len, &n);
  if (io == TlsSession::Io::kOk) return n;
  if (io == TlsSession::Io::kClosed) return 0;
  Fail(io, "TLS read");
}

uint32_t TlsClientSocket::write_partial(const uint8_t* buf, uint32_t len) {
  if (tls_ == nullptr) throw TTransportException(TTransportException::NOT_OPEN);
  uint32_t n = 0;
  TlsSession::Io io = tls_->Write(buf, len, &n);
  if (io == TlsSession::Io::kOk) return n;
  // A full socket past the send timeout: TSocket::write reports a timeout.
  if (io == TlsSession::Io::kWantWrite || io == TlsSession::Io::kWantRead)
    return 0;
  Fail(io, "TLS write");
}

}  // namespace fabps::rpc
