// Out-of-band TCP channel for the fabric benchmark: the server listens, the
// client connects, and they swap fabric addresses and region descriptors and
// synchronize between tests, the way fabtests do. Every read and write has a
// timeout.
#ifndef FABPS_BENCH_TRANSPORT_OOB_H_
#define FABPS_BENCH_TRANSPORT_OOB_H_

#include <string>

#include "base/status.h"

namespace fabps::bench {

class OobChannel {
 public:
  // Server side: listens on host:port (port 0 picks one; see port()), waits
  // up to timeout_ms for one client.
  static Result<OobChannel> Accept(const std::string& host, int port,
                                   int timeout_ms, void (*on_listen)(int port));
  // Client side: connects, retrying until timeout_ms.
  static Result<OobChannel> Connect(const std::string& host, int port,
                                    int timeout_ms);

  OobChannel() = default;
  OobChannel(OobChannel&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  OobChannel& operator=(OobChannel&& o) noexcept;
  ~OobChannel();

  // Length-prefixed messages, at most 1 MiB.
  Status SendMsg(const std::string& msg, int timeout_ms = 60000);
  Result<std::string> RecvMsg(int timeout_ms = 60000);
  // Both sides call it; returns when both have.
  Status Barrier(int timeout_ms = 60000);

 private:
  explicit OobChannel(int fd) : fd_(fd) {}
  Status WriteAll(const void* p, size_t n, int timeout_ms);
  Status ReadAll(void* p, size_t n, int timeout_ms);
  int fd_ = -1;
};

}  // namespace fabps::bench

#endif  // FABPS_BENCH_TRANSPORT_OOB_H_
