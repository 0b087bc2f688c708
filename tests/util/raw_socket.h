// A plain blocking TCP client for tests that play a bad peer: send any
// bytes, half-finished frames or nothing at all, then see whether the
// server answered or closed, with a deadline on every wait.
#ifndef FABPS_TESTS_UTIL_RAW_SOCKET_H_
#define FABPS_TESTS_UTIL_RAW_SOCKET_H_

#include <cstdint>
#include <string>

#include "base/status.h"

namespace fabps::testing {

class RawSocket {
 public:
  // Connects to host:port (IPv4 literal) within timeout_ms. Unavailable
  // when refused, TimedOut when the connect does not finish in time.
  static Result<RawSocket> Connect(const std::string& host, int port,
                                   int timeout_ms = 2000);

  RawSocket() = default;
  RawSocket(RawSocket&& o) noexcept;
  RawSocket& operator=(RawSocket&& o) noexcept;
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;
  ~RawSocket();  // closes

  // Sends all of `bytes` (no SIGPIPE). Unavailable once the peer has closed
  // or reset the connection.
  Status Send(const std::string& bytes);
  // Half-closes the sending side (the server reads the end).
  void ShutdownWrite();
  void Close();

  enum class Outcome {
    kClosed,    // the peer closed or reset the connection
    kReply,     // one whole frame arrived (in `frame`, without its length)
    kTimedOut,  // neither within the timeout
  };
  // Waits up to timeout_ms for one whole frame or the end of the
  // connection. Bytes of a frame that is not whole yet stay buffered.
  Outcome WaitForFrameOrClose(int timeout_ms, std::string* frame = nullptr);
  // True when the peer has closed the connection (reads the end or a reset
  // within timeout_ms); any data before it is discarded.
  bool WaitClosed(int timeout_ms);

  int fd() const { return fd_; }

 private:
  explicit RawSocket(int fd) : fd_(fd) {}
  int fd_ = -1;
  std::string pending_;  // received bytes not yet returned
};

// A loopback listener that never accepts: the kernel completes a client's
// connect into its backlog and no byte ever comes back (a frozen peer, or a
// dead server's port taken by a process that speaks another protocol).
class SilentListener {
 public:
  SilentListener();  // binds 127.0.0.1 on a free port and listens
  ~SilentListener();
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;

  bool ok() const { return port_ != 0; }  // false when it could not listen
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Names the outcome for test messages.
const char* OutcomeName(RawSocket::Outcome o);

}  // namespace fabps::testing

#endif  // FABPS_TESTS_UTIL_RAW_SOCKET_H_
