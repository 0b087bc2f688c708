#include "thrift/internal/connection_guard.h"

#include <sys/socket.h>

#include <utility>

#include "base/log.h"

namespace fabps::rpc::internal {

void ConnectionGuard::Admit(ConnectionState* s, bool refused) {
  std::lock_guard<std::mutex> l(mu_);
  Clock::time_point now = Clock::now();
  s->accepted_ = s->last_activity_ = now;
  live_.insert(s);
  stats_.accepted++;
  if (refused) {
    s->refused_ = true;
    stats_.refused++;
    DoomLocked(s, SHUT_RDWR,
               "refused: accept failed (out of file descriptors?)");
    return;
  }
  if (counted_ >= o_.max_connections) {
    // Evict the idle connection that has done least: never used, then
    // longest idle.
    ConnectionState* victim = nullptr;
    for (ConnectionState* c : live_) {
      if (c == s || c->doomed_ || !IdleLocked(c)) continue;
      if (victim == nullptr ||
          std::make_pair(c->frames_in_ > 0, c->last_activity_) <
              std::make_pair(victim->frames_in_ > 0, victim->last_activity_)) {
        victim = c;
      }
    }
    if (victim == nullptr) {
      s->refused_ = true;
      stats_.refused++;
      DoomLocked(s, SHUT_RDWR, "refused: every connection is busy");
      return;
    }
    stats_.evicted++;
    DoomLocked(victim, SHUT_RDWR, "evicted: connection limit reached");
  }
  counted_++;
}

void ConnectionGuard::Forget(ConnectionState* s) {
  std::lock_guard<std::mutex> l(mu_);
  if (live_.erase(s) == 0) return;
  stats_.closed++;
  ReleaseLocked(s);
  if (!s->doomed_) counted_--;  // refused sockets are doomed from the start
}

bool ConnectionGuard::OnRead(ConnectionState* s, const uint8_t* p, size_t n) {
  std::lock_guard<std::mutex> l(mu_);
  Clock::time_point now = Clock::now();
  int64_t announced = -1;
  int frames = s->in_.Feed(p, n, now, &announced);
  if (announced >= 0) stats_.request_frames++;
  if (announced == 0) {
    // TNonblockingServer never serves an empty frame: it waits for one more
    // byte and then closes. Counted as a request, the connection would wait
    // for a reply forever, never idle, so never timed out nor evicted.
    stats_.bad_frames++;
    DoomLocked(s, SHUT_RDWR, "empty frame");
    return false;
  }
  if (announced >= 0 &&
      static_cast<uint64_t>(announced) <= o_.max_frame_bytes) {
    // The server allocates the frame once it knows the length: reserve it.
    uint64_t budget = o_.max_pending_request_bytes;
    if (pending_bytes_ + static_cast<uint64_t>(announced) > budget) {
      stats_.over_pending_bytes++;
      DoomLocked(s, SHUT_RDWR, "frame over the pending-request-bytes budget");
      return false;
    }
    ReleaseLocked(s);
    s->reserved_bytes_ = static_cast<uint64_t>(announced);
    pending_bytes_ += s->reserved_bytes_;
  }
  if (frames > 0) {
    s->frames_in_ += frames;
    s->waiting_reply_ = true;
    s->last_activity_ = now;
  }
  return true;
}

void ConnectionGuard::OnWriteBegin(ConnectionState* s) {
  std::lock_guard<std::mutex> l(mu_);
  s->out_.Begin(Clock::now());
}

bool ConnectionGuard::OnWritten(ConnectionState* s, const uint8_t* p,
                                size_t n) {
  std::lock_guard<std::mutex> l(mu_);
  Clock::time_point now = Clock::now();
  if (s->out_.Feed(p, n, now, nullptr) == 0) return false;
  s->waiting_reply_ = false;
  s->last_activity_ = now;
  ReleaseLocked(s);
  return true;
}

void ConnectionGuard::OnProcessBegin(ConnectionState* s) {
  std::lock_guard<std::mutex> l(mu_);
  s->busy_++;
}

void ConnectionGuard::OnProcessEnd(ConnectionState* s, bool wrote_reply) {
  std::lock_guard<std::mutex> l(mu_);
  s->busy_--;
  s->last_activity_ = Clock::now();
  if (!wrote_reply && s->busy_ == 0) {
    // Nothing to send (a oneway call): the request is answered.
    s->waiting_reply_ = false;
    ReleaseLocked(s);
  }
}

void ConnectionGuard::DropAfterReply(ConnectionState* s) {
  std::lock_guard<std::mutex> l(mu_);
  stats_.bad_requests++;
  // SHUT_RD only: the error reply still goes out, then the server's next
  // read sees the end (and the socket reads as closed from then on).
  if (live_.count(s) != 0) DoomLocked(s, SHUT_RD, "bad request");
}

void ConnectionGuard::DropPipelinedTls(ConnectionState* s) {
  std::lock_guard<std::mutex> l(mu_);
  stats_.pipelined_over_tls++;
  if (live_.count(s) != 0) {
    DoomLocked(s, SHUT_RDWR, "requests pipelined over TLS are not served");
  }
}

void ConnectionGuard::OnTlsFailure(ConnectionState* s, const std::string& why) {
  std::lock_guard<std::mutex> l(mu_);
  stats_.tls_failures++;
  if (live_.count(s) != 0) DoomLocked(s, SHUT_RDWR, ("TLS: " + why).c_str());
}

void ConnectionGuard::Reap() {
  std::lock_guard<std::mutex> l(mu_);
  Clock::time_point now = Clock::now();
  auto over = [&](Clock::time_point since, int64_t limit_ms) {
    return limit_ms > 0 && MsBetween(since, now) > limit_ms;
  };
  for (ConnectionState* s : live_) {
    if (s->doomed_) continue;
    const char* why = nullptr;
    if (s->in_.active && over(s->in_.started, o_.frame_timeout_ms)) {
      why = "request frame not received whole in time";
    } else if (s->out_.active && over(s->out_.started, o_.frame_timeout_ms)) {
      why = "reply not taken by the peer in time";
    } else if (IdleLocked(s)) {
      if (s->frames_in_ == 0) {
        if (over(s->last_activity_, o_.first_request_timeout_ms))
          why = "no request in time after connecting";
      } else if (over(s->last_activity_, o_.idle_timeout_ms)) {
        why = "idle";
      }
    }
    if (why != nullptr) {
      stats_.timed_out++;
      DoomLocked(s, SHUT_RDWR, why);
    }
  }
}

bool ConnectionGuard::IdleLocked(const ConnectionState* s) const {
  return !s->in_.active && !s->out_.active && !s->waiting_reply_ &&
         s->busy_ == 0;
}

void ConnectionGuard::DoomLocked(ConnectionState* s, int how, const char* why) {
  if (s->doomed_) return;
  if (!s->refused_) counted_--;
  s->doomed_ = true;
  s->closing_.store(true, std::memory_order_release);
  // The fd stays open until the server closes it, which Forget()s the
  // socket first, under mu_: shutting it down here cannot hit a reused fd.
  ::shutdown(s->fd_, how);
  Warn(std::string("rpc server: closing the connection from ") + s->peer_ +
       ": " + why);
}

void ConnectionGuard::ReleaseLocked(ConnectionState* s) {
  pending_bytes_ -= s->reserved_bytes_;
  s->reserved_bytes_ = 0;
}

// At most one warning a second, so that a flood of bad peers cannot flood
// the log; the rest are counted.
void ConnectionGuard::Warn(const std::string& what) {
  Clock::time_point now = Clock::now();
  if (MsBetween(last_warning_, now) < 1000 &&
      last_warning_ != Clock::time_point{}) {
    warnings_suppressed_++;
    return;
  }
  last_warning_ = now;
  FABPS_LOG(WARNING) << what
                     << (warnings_suppressed_ > 0
                             ? " (and " + std::to_string(warnings_suppressed_) +
                                   " more in the last second)"
                             : std::string());
  warnings_suppressed_ = 0;
}

}  // namespace fabps::rpc::internal
