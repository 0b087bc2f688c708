// GuardedServerSocket: the listening socket of an RpcServer. Accepts with
// GuardedSockets (guarded_socket.h) registered with the connection guard,
// attaching a TLS session when TLS is on.
//
// It never throws out of the event loop (TNonblockingServer would stop
// serving). When accept() fails it hands the server a connection that reads
// as closed instead: the pending peer itself when out of descriptors and a
// spare one lets it be accepted (so it is told no rather than left
// waiting), else a socket end whose peer is gone, kept for that and never
// closed. Such connections are admitted as refused (counted in the stats).
//
// Threads: acceptImpl() runs on IO thread 0 only (TNonblockingServer's
// listener).
#ifndef FABPS_THRIFT_INTERNAL_GUARDED_SERVER_SOCKET_H_
#define FABPS_THRIFT_INTERNAL_GUARDED_SERVER_SOCKET_H_

#include <thrift/TConfiguration.h>
#include <thrift/transport/TNonblockingServerSocket.h>

#include <cstddef>
#include <memory>
#include <string>

#include "thrift/internal/connection_guard.h"
#include "thrift/tls.h"

namespace fabps::rpc::internal {

class GuardedServerSocket
    : public apache::thrift::transport::TNonblockingServerSocket {
 public:
  // `max_frame_bytes`: the largest request frame (each socket reads one in
  // a single call). `tls`: null for plain TCP. Throws TTransportException
  // when the spare descriptors cannot be made.
  GuardedServerSocket(const std::string& host, int port, size_t max_frame_bytes,
                      std::shared_ptr<ConnectionGuard> guard,
                      std::shared_ptr<TlsContext> tls);
  ~GuardedServerSocket() override;

 protected:
  std::shared_ptr<apache::thrift::transport::TSocket> acceptImpl() override;

 private:
  const std::shared_ptr<ConnectionGuard> guard_;
  const std::shared_ptr<TlsContext> tls_;
  const std::shared_ptr<apache::thrift::TConfiguration> socket_config_;
  int spare_fd_ = -1;     // IO thread 0 only
  int dead_end_fd_ = -1;  // never handed over for good
};

}  // namespace fabps::rpc::internal

#endif  // FABPS_THRIFT_INTERNAL_GUARDED_SERVER_SOCKET_H_
