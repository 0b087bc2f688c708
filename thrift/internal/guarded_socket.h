// GuardedSocket: the TSocket of one accepted connection, through which the
// connection guard (connection_guard.h) sees its traffic.
//
// Every byte TNonblockingServer reads or writes passes here and is reported
// to the guard; once the guard has given up on the connection the socket
// reads as closed, so that the server closes it on its own IO thread. With
// TLS the socket reads and writes through its session, and the guard sees
// the plain bytes (so every limit applies to the decrypted frames); a
// failed handshake or record is reported to the guard and reads as closed,
// and so does a connection whose reply went out while the session already
// held the next request (the server would never read it: it waits on the
// socket).
//
// Lifetime: owned by the server (shared_ptr); Forget()s its ConnectionState
// on close() and destruction, before the descriptor can be reused.
// Threads: used only by the connection's IO thread, except state(), whose
// use is the guard's business.
#ifndef FABPS_THRIFT_INTERNAL_GUARDED_SOCKET_H_
#define FABPS_THRIFT_INTERNAL_GUARDED_SOCKET_H_

#include <sys/socket.h>
#include <thrift/TConfiguration.h>
#include <thrift/transport/TSocket.h>

#include <cstdint>
#include <memory>

#include "thrift/internal/connection_guard.h"
#include "thrift/tls.h"

namespace fabps::rpc::internal {

class GuardedSocket : public apache::thrift::transport::TSocket {
 public:
  // `config` bounds a single read (TSocket refuses reads past its maximum
  // message size): at least the largest frame. `shared_fd`: the fd belongs
  // to someone else and is never closed here.
  GuardedSocket(int fd, std::shared_ptr<ConnectionGuard> guard,
                std::shared_ptr<apache::thrift::TConfiguration> config,
                bool shared_fd = false);
  ~GuardedSocket() override;

  // Before the guard admits the connection: the peer's address (cached, and
  // named in the guard's logs), and with TLS the session (on this fd, not
  // yet shaken hands: the first read does that).
  void SetPeer(const sockaddr* addr, socklen_t len);
  void SetTls(std::unique_ptr<TlsSession> tls) { tls_ = std::move(tls); }

  ConnectionState* state() { return &state_; }

  uint32_t read(uint8_t* buf, uint32_t len) override;
  uint32_t write_partial(const uint8_t* buf, uint32_t len) override;
  // TNonblockingServer reads on once a frame's length is in when this says
  // so: decrypted bytes may wait in the session with the socket empty.
  bool hasPendingDataToRead() override;
  void close() override;

 private:
  uint32_t TlsRead(uint8_t* buf, uint32_t len);
  uint32_t TlsWrite(const uint8_t* buf, uint32_t len);

  const std::shared_ptr<ConnectionGuard> guard_;
  const bool shared_fd_;
  std::unique_ptr<TlsSession> tls_;  // set before Admit, when TLS is on
  ConnectionState state_;
};

}  // namespace fabps::rpc::internal

#endif  // FABPS_THRIFT_INTERNAL_GUARDED_SOCKET_H_
