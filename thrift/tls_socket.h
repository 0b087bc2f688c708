// The client end of a TLS control-plane connection as a Thrift TSocket
// (thrift/tls.h says what is checked). RpcConnection uses it through
// OpenFramedChannel when TLS is on.
//
// open() connects within the connect timeout and then completes the
// handshake within the same time again; reads and writes keep the socket's
// receive and send timeouts. Failures throw TlsException, a
// TTransportException that says whether the peer refused (a certificate or
// TLS mismatch: no use retrying) or the connection broke.
#ifndef FABPS_THRIFT_TLS_SOCKET_H_
#define FABPS_THRIFT_TLS_SOCKET_H_

#include <thrift/transport/TSocket.h>
#include <thrift/transport/TTransportException.h>

#include <memory>
#include <string>

#include "thrift/tls.h"

namespace fabps::rpc {

class TlsException : public apache::thrift::transport::TTransportException {
 public:
  TlsException(TTransportExceptionType type, const std::string& message,
               bool refused)
      : TTransportException(type, message), refused_(refused) {}
  bool refused() const { return refused_; }

 private:
  bool refused_;
};

class TlsClientSocket : public apache::thrift::transport::TSocket {
 public:
  TlsClientSocket(std::shared_ptr<TlsContext> context, const std::string& host,
                  int port,
                  std::shared_ptr<apache::thrift::TConfiguration> config);
  ~TlsClientSocket() override;

  void open() override;
  void close() override;
  bool peek() override;
  uint32_t read(uint8_t* buf, uint32_t len) override;
  uint32_t write_partial(const uint8_t* buf, uint32_t len) override;

 private:
  void Handshake();
  [[noreturn]] void Fail(TlsSession::Io io, const char* op);

  std::shared_ptr<TlsContext> context_;
  std::unique_ptr<TlsSession> tls_;
};

}  // namespace fabps::rpc

#endif  // FABPS_THRIFT_TLS_SOCKET_H_
