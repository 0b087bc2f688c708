// ConnectionGuard: the policy RpcServer (thrift/rpc_server.h) applies to
// every accepted connection, and ConnectionState, what it knows of each.
//
// The guard sees a connection through its GuardedSocket (the bytes read and
// written) and GuardedProcessor (a request starts, ends, was bad), and keeps
// per connection a small state machine: a request frame under way (bounded
// by frame_timeout_ms), a request the server owes a reply to, a reply under
// way (frame_timeout_ms again), or idle (first_request_timeout_ms before the
// first request, idle_timeout_ms after). On top: the connection limit (evict
// the idlest, refuse when all are busy) and the budget of request bytes
// announced and not yet answered.
//
// The guard never closes a descriptor: it shuts a doomed connection down
// and marks it closing, its socket then reads as closed, and the server
// closes it on its own IO thread (which Forget()s it first). So every call
// here is safe against a descriptor being reused.
//
// Thread safety: all methods may be called from any thread (IO threads,
// workers, the reaper); one mutex guards every connection's state.
#ifndef FABPS_THRIFT_INTERNAL_CONNECTION_GUARD_H_
#define FABPS_THRIFT_INTERNAL_CONNECTION_GUARD_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>

#include "thrift/internal/frame_meter.h"
#include "thrift/rpc_server.h"

namespace fabps::rpc::internal {

class ConnectionGuard;

// One connection as the guard follows it. Owned by its socket, which must
// Forget() it before it goes or its descriptor is closed.
class ConnectionState {
 public:
  explicit ConnectionState(int fd) : fd_(fd) {}
  ConnectionState(const ConnectionState&) = delete;
  ConnectionState& operator=(const ConnectionState&) = delete;

  // "address:port" of the peer, for logs. Set before Admit(), then constant.
  const std::string& peer() const { return peer_; }
  void set_peer(std::string peer) { peer_ = std::move(peer); }
  // True once the guard has given up on the connection: its socket must
  // read as closed from then on. Any thread.
  bool closing() const { return closing_.load(std::memory_order_acquire); }

 private:
  friend class ConnectionGuard;

  const int fd_;  // shut down by the guard, never closed by it
  std::string peer_ = "(not accepted)";
  std::atomic<bool> closing_{false};
  // Guarded by the guard's mutex.
  Clock::time_point accepted_;
  Clock::time_point last_activity_;
  FrameMeter in_, out_;
  uint64_t frames_in_ = 0;
  uint64_t reserved_bytes_ = 0;  // of the pending-bytes budget
  bool waiting_reply_ = false;   // a whole request is the server's to answer
  int busy_ = 0;                 // messages being processed
  bool doomed_ = false;          // shut down; the server will close it
  bool refused_ = false;
};

class ConnectionGuard {
 public:
  // `o` as validated by RpcServer::Start (max_pending_request_bytes set).
  explicit ConnectionGuard(const RpcServerOptions& o) : o_(o) {}

  // A connection was accepted. Registers it, making room by evicting an
  // idle connection when at the limit, or marks it refused when none is.
  void Admit(ConnectionState* s, bool refused);
  // The connection goes (closed or destroyed); no-op when not registered.
  void Forget(ConnectionState* s);
  // Bytes read by the server; false when the connection must be dropped
  // (an empty frame, or a frame that would pass the pending-bytes budget).
  bool OnRead(ConnectionState* s, const uint8_t* p, size_t n);
  void OnWriteBegin(ConnectionState* s);
  // Bytes written; true when they complete a reply frame.
  bool OnWritten(ConnectionState* s, const uint8_t* p, size_t n);
  // A worker starts or ends one message of a request on `s`.
  void OnProcessBegin(ConnectionState* s);
  void OnProcessEnd(ConnectionState* s, bool wrote_reply);
  // The request on `s` was bad: after its error reply, close it.
  void DropAfterReply(ConnectionState* s);
  // A reply went out on `s` while its TLS session holds the next request,
  // decrypted, which the server would never read (it waits for the socket):
  // close it, so the peer learns at once that the request did not run.
  void DropPipelinedTls(ConnectionState* s);
  // The TLS handshake or a TLS record from `s` failed; the server closes it.
  void OnTlsFailure(ConnectionState* s, const std::string& why);
  // Closes connections whose time is up.
  void Reap();
  RpcServerStats stats() {
    std::lock_guard<std::mutex> l(mu_);
    return stats_;
  }

 private:
  bool IdleLocked(const ConnectionState* s) const;
  void DoomLocked(ConnectionState* s, int how, const char* why);
  void ReleaseLocked(ConnectionState* s);
  void Warn(const std::string& what);

  const RpcServerOptions o_;
  std::mutex mu_;
  // Guarded by mu_: the set, the counters, and the guarded fields of every
  // ConnectionState.
  std::unordered_set<ConnectionState*> live_;
  size_t counted_ = 0;  // live, neither doomed nor refused
  uint64_t pending_bytes_ = 0;
  RpcServerStats stats_;
  Clock::time_point last_warning_{};
  uint64_t warnings_suppressed_ = 0;
};

}  // namespace fabps::rpc::internal

#endif  // FABPS_THRIFT_INTERNAL_CONNECTION_GUARD_H_
