#include "thrift/rpc_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <thrift/TApplicationException.h>
#include <thrift/TConfiguration.h>
#include <thrift/TProcessor.h>
#include <thrift/concurrency/ThreadFactory.h>
#include <thrift/concurrency/ThreadManager.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TNonblockingServer.h>
#include <thrift/server/TServer.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TNonblockingServerSocket.h>
#include <thrift/transport/TSocket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <thread>
#include <unordered_set>

#include "base/log.h"
#include "thrift/job_token.h"
#include "thrift/rpc_client.h"
#include "thrift/tls.h"

namespace fabps::rpc {
namespace internal {

using apache::thrift::TApplicationException;
using apache::thrift::TConfiguration;
using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::protocol::TProtocol;
using apache::thrift::transport::TMemoryBuffer;
using apache::thrift::transport::TNonblockingServerSocket;
using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransport;
using apache::thrift::transport::TTransportException;
using Clock = std::chrono::steady_clock;

int64_t MsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

// Follows the frames of one direction of a connection from the bytes that
// pass: a 4-byte big-endian length, then that many bytes.
struct FrameMeter {
  bool active = false;  // a frame has begun and not ended
  Clock::time_point started;
  int header_got = 0;
  uint8_t header[4] = {};
  uint64_t body_left = 0;

  void Begin(Clock::time_point now) {
    if (active) return;
    active = true;
    started = now;
    header_got = 0;
    body_left = 0;
  }
  // Consumes n bytes; *header_done is set to the frame length when a header
  // completes (at most one per call is reported); returns frames completed.
  int Feed(const uint8_t* p, size_t n, Clock::time_point now,
           int64_t* header_done) {
    int frames = 0;
    while (n > 0) {
      Begin(now);
      if (header_got < 4) {
        size_t take = std::min<size_t>(n, 4 - header_got);
        std::memcpy(header + header_got, p, take);
        header_got += static_cast<int>(take);
        p += take;
        n -= take;
        if (header_got < 4) break;
        uint32_t be;
        std::memcpy(&be, header, 4);
        body_left = ntohl(be);
        if (header_done) *header_done = static_cast<int64_t>(body_left);
      } else {
        size_t take = static_cast<size_t>(std::min<uint64_t>(n, body_left));
        body_left -= take;
        p += take;
        n -= take;
      }
      if (header_got == 4 && body_left == 0) {
        active = false;
        frames++;
      }
    }
    return frames;
  }
};

class GuardedSocket;

// Every accepted connection of one server, what each is doing, and the
// policy: timeouts, the connection limit, the pending-bytes budget. Called
// from the IO threads (bytes in and out, accept), the workers (a request
// starts or ends) and the reaper thread.
class ConnectionGuard {
 public:
  explicit ConnectionGuard(const RpcServerOptions& o) : o_(o) {}

  // A connection was accepted. Registers it, making room by evicting an
  // idle connection when at the limit, or marks it refused when none is.
  void Admit(GuardedSocket* s, bool refused);
  void Forget(GuardedSocket* s);
  // Bytes read by the server; false when the connection must be dropped
  // (its frame would pass the pending-bytes budget).
  bool OnRead(GuardedSocket* s, const uint8_t* p, size_t n);
  void OnWriteBegin(GuardedSocket* s);
  void OnWritten(GuardedSocket* s, const uint8_t* p, size_t n);
  // A worker starts or ends one message of a request on `s`.
  void OnProcessBegin(GuardedSocket* s);
  void OnProcessEnd(GuardedSocket* s, bool wrote_reply);
  // The request on `s` was bad: after its error reply, close it.
  void DropAfterReply(GuardedSocket* s);
  // The TLS handshake or a TLS record from `s` failed; the server closes it.
  void OnTlsFailure(GuardedSocket* s, const std::string& why);
  // Closes connections whose time is up.
  void Reap();
  RpcServerStats stats() {
    std::lock_guard<std::mutex> l(mu_);
    return stats_;
  }

 private:
  bool IdleLocked(const GuardedSocket* s) const;
  void DoomLocked(GuardedSocket* s, int how, const char* why);
  void ReleaseLocked(GuardedSocket* s);
  void Warn(const std::string& what);

  const RpcServerOptions o_;
  std::mutex mu_;
  // Guarded by mu_: the set, the counters, and every GuardedSocket field
  // marked as such.
  std::unordered_set<GuardedSocket*> live_;
  size_t counted_ = 0;  // live, neither doomed nor refused
  uint64_t pending_bytes_ = 0;
  RpcServerStats stats_;
  Clock::time_point last_warning_{};
  uint64_t warnings_suppressed_ = 0;
};

// The TSocket of one accepted connection: reports its traffic to the guard,
// and reads as closed once the guard has given up on it (so that the server
// closes it on its own thread). With TLS it reads and writes through its
// session (the guard sees the plain bytes); all of it runs on the
// connection's IO thread.
class GuardedSocket : public TSocket {
 public:
  friend class GuardedServerSocket;
  // `shared_fd`: the fd belongs to someone else and is never closed here.
  // `config` bounds a single read (TSocket refuses reads past its maximum
  // message size): at least the largest frame.
  GuardedSocket(int fd, std::shared_ptr<ConnectionGuard> guard,
                std::shared_ptr<TConfiguration> config, bool shared_fd = false)
      : TSocket(fd, std::move(config)),
        guard_(std::move(guard)),
        fd_(fd),
        shared_fd_(shared_fd) {}
  ~GuardedSocket() override {
    guard_->Forget(this);
    tls_.reset();
    if (shared_fd_) socket_ = THRIFT_INVALID_SOCKET;  // ~TSocket closes it
  }

  uint32_t read(uint8_t* buf, uint32_t len) override {
    if (closing_.load(std::memory_order_acquire)) return 0;
    uint32_t n = tls_ ? TlsRead(buf, len) : TSocket::read(buf, len);
    if (n > 0 && !guard_->OnRead(this, buf, n)) return 0;
    return n;
  }
  uint32_t write_partial(const uint8_t* buf, uint32_t len) override {
    guard_->OnWriteBegin(this);
    uint32_t n = tls_ ? TlsWrite(buf, len) : TSocket::write_partial(buf, len);
    if (n > 0) guard_->OnWritten(this, buf, n);
    return n;
  }
  // TNonblockingServer reads on once a frame's length is in when this says
  // so: decrypted bytes may wait in the session with the socket empty.
  bool hasPendingDataToRead() override {
    return tls_ ? tls_->Pending() > 0 : TSocket::hasPendingDataToRead();
  }
  void close() override {
    guard_->Forget(this);  // before the fd can be reused
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

 private:
  friend class ConnectionGuard;

  // TNonblockingServer takes an exception whose text has "retry" as "wait
  // for the socket and call again"; a 0 as the end of the connection.
  uint32_t TlsRead(uint8_t* buf, uint32_t len) {
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
        guard_->OnTlsFailure(this, tls_->error());
        return 0;
    }
    return 0;
  }
  uint32_t TlsWrite(const uint8_t* buf, uint32_t len) {
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

  const std::shared_ptr<ConnectionGuard> guard_;
  const int fd_;
  const bool shared_fd_;
  std::unique_ptr<TlsSession> tls_;      // set before Admit, when TLS is on
  std::string peer_ = "(not accepted)";  // set before Admit, then constant
  std::atomic<bool> closing_{false};
  // Guarded by the guard's mu_.
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

void ConnectionGuard::Admit(GuardedSocket* s, bool refused) {
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
    GuardedSocket* victim = nullptr;
    for (GuardedSocket* c : live_) {
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

void ConnectionGuard::Forget(GuardedSocket* s) {
  std::lock_guard<std::mutex> l(mu_);
  if (live_.erase(s) == 0) return;
  ReleaseLocked(s);
  if (!s->doomed_) counted_--;  // refused sockets are doomed from the start
}

bool ConnectionGuard::OnRead(GuardedSocket* s, const uint8_t* p, size_t n) {
  std::lock_guard<std::mutex> l(mu_);
  Clock::time_point now = Clock::now();
  int64_t announced = -1;
  int frames = s->in_.Feed(p, n, now, &announced);
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

void ConnectionGuard::OnWriteBegin(GuardedSocket* s) {
  std::lock_guard<std::mutex> l(mu_);
  s->out_.Begin(Clock::now());
}

void ConnectionGuard::OnWritten(GuardedSocket* s, const uint8_t* p, size_t n) {
  std::lock_guard<std::mutex> l(mu_);
  Clock::time_point now = Clock::now();
  if (s->out_.Feed(p, n, now, nullptr) > 0) {
    s->waiting_reply_ = false;
    s->last_activity_ = now;
    ReleaseLocked(s);
  }
}

void ConnectionGuard::OnProcessBegin(GuardedSocket* s) {
  std::lock_guard<std::mutex> l(mu_);
  s->busy_++;
}

void ConnectionGuard::OnProcessEnd(GuardedSocket* s, bool wrote_reply) {
  std::lock_guard<std::mutex> l(mu_);
  s->busy_--;
  s->last_activity_ = Clock::now();
  if (!wrote_reply && s->busy_ == 0) {
    // Nothing to send (a oneway call): the request is answered.
    s->waiting_reply_ = false;
    ReleaseLocked(s);
  }
}

void ConnectionGuard::DropAfterReply(GuardedSocket* s) {
  std::lock_guard<std::mutex> l(mu_);
  stats_.bad_requests++;
  // SHUT_RD only: the error reply still goes out, then the server's next
  // read sees the end (and the socket reads as closed from then on).
  if (live_.count(s) != 0) DoomLocked(s, SHUT_RD, "bad request");
}

void ConnectionGuard::OnTlsFailure(GuardedSocket* s, const std::string& why) {
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
  for (GuardedSocket* s : live_) {
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

bool ConnectionGuard::IdleLocked(const GuardedSocket* s) const {
  return !s->in_.active && !s->out_.active && !s->waiting_reply_ &&
         s->busy_ == 0;
}

void ConnectionGuard::DoomLocked(GuardedSocket* s, int how, const char* why) {
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

void ConnectionGuard::ReleaseLocked(GuardedSocket* s) {
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

// The listening socket: accepts with GuardedSockets and never throws out of
// the event loop (TNonblockingServer would stop serving). When accept()
// fails it hands the server a connection that reads as closed instead: the
// pending peer itself when out of descriptors and a spare one lets it be
// accepted (so it is told no rather than left waiting), else a socket end
// whose peer is gone, kept for that and never closed.
class GuardedServerSocket : public TNonblockingServerSocket {
 public:
  // `tls`: null for plain TCP.
  GuardedServerSocket(const std::string& host, int port, size_t max_frame_bytes,
                      std::shared_ptr<ConnectionGuard> guard,
                      std::shared_ptr<TlsContext> tls)
      : TNonblockingServerSocket(host, port),
        guard_(std::move(guard)),
        tls_(std::move(tls)),
        // TNonblockingServer reads a frame's body in one read() call, which
        // TSocket refuses past its maximum message size (100 MiB by
        // default): let it be the frame limit.
        socket_config_(std::make_shared<TConfiguration>(
            static_cast<int>(max_frame_bytes),
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
  ~GuardedServerSocket() override {
    if (spare_fd_ >= 0) ::close(spare_fd_);
    ::close(dead_end_fd_);
  }

 protected:
  std::shared_ptr<TSocket> acceptImpl() override {
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
      socket->setCachedAddress(reinterpret_cast<sockaddr*>(&addr), len);
      socket->peer_ = socket->getPeerAddress() + ":" +
                      std::to_string(socket->getPeerPort());
      if (tls_ != nullptr && !refused) {
        std::string why;
        socket->tls_ = TlsSession::Make(*tls_, fd, "", &why);
        if (socket->tls_ == nullptr) {
          FABPS_LOG(WARNING) << "rpc server: " << why;
          refused = true;
        }
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
    guard_->Admit(socket.get(), refused);
    return socket;
  }

 private:
  const std::shared_ptr<ConnectionGuard> guard_;
  const std::shared_ptr<TlsContext> tls_;
  const std::shared_ptr<TConfiguration> socket_config_;
  int spare_fd_ = -1;     // IO thread 0 only
  int dead_end_fd_ = -1;  // never handed over for good
};

// Elements of one list, set or map inside a request.
constexpr int32_t kMaxContainerElements = 1 << 20;

// Per-connection context: which socket a request came on.
struct ConnectionContext {
  GuardedSocket* socket = nullptr;
  bool authenticated = false;  // presented the job token
};

// The method name of the message in `buffer`, without consuming it; "" when
// the frame does not start like a strict binary message.
std::string PeekMethodName(TMemoryBuffer* buffer) {
  uint32_t len = 8;
  const uint8_t* p = buffer->borrow(nullptr, &len);
  if (p == nullptr || len < 8) return "";
  auto be32 = [](const uint8_t* b) {
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
           (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  };
  if ((be32(p) & 0xffff0000u) != 0x80010000u) return "";
  uint32_t n = be32(p + 4);
  if (n > 64 || len < 8 + n) return "";
  return std::string(reinterpret_cast<const char*>(p + 8), n);
}

// Wraps the service's processor: bounds string and container lengths by the
// frame, answers undecodable requests and non-calls with an error and drops
// their connection, and tells the guard when a request is being served.
class GuardedProcessor : public apache::thrift::TProcessor {
 public:
  GuardedProcessor(std::shared_ptr<TProcessor> inner,
                   std::shared_ptr<ConnectionGuard> guard, std::string token)
      : inner_(std::move(inner)),
        guard_(std::move(guard)),
        token_(std::move(token)) {}

  bool process(std::shared_ptr<TProtocol> in, std::shared_ptr<TProtocol> out,
               void* connection_context) override {
    auto* ctx = static_cast<ConnectionContext*>(connection_context);
    GuardedSocket* socket = ctx != nullptr ? ctx->socket : nullptr;
    auto* in_buffer = dynamic_cast<TMemoryBuffer*>(in->getTransport().get());
    auto* out_buffer = dynamic_cast<TMemoryBuffer*>(out->getTransport().get());
    if (in_buffer != nullptr) BoundByFrame(in.get(), in_buffer);
    uint32_t out_before = out_buffer ? out_buffer->available_read() : 0;
    if (socket) guard_->OnProcessBegin(socket);
    bool ok = false;
    TApplicationException::TApplicationExceptionType error =
        TApplicationException::PROTOCOL_ERROR;
    std::string message;
    try {
      std::string method =
          in_buffer != nullptr ? PeekMethodName(in_buffer) : std::string();
      if (method == kAuthMethod) {
        ok = Authenticate(in.get(), out.get(), ctx, socket, &message);
        if (!ok) error = TApplicationException::UNKNOWN;
      } else if (!token_.empty() && (ctx == nullptr || !ctx->authenticated)) {
        error = TApplicationException::UNKNOWN;
        message = "job token required (FABPS_JOB_TOKEN): call refused";
        FABPS_LOG(WARNING) << "rpc server: refused '" << method << "' from "
                           << PeerOf(socket) << ": no job token presented";
      } else {
        ok = inner_->process(in, out, connection_context);
        if (!ok) {
          error = TApplicationException::INVALID_MESSAGE_TYPE;
          message = "not a call";
        }
      }
    } catch (const std::exception& e) {
      message = std::string("bad request: ") + e.what();
    }
    bool wrote = out_buffer && out_buffer->available_read() != out_before;
    if (!ok && !wrote && out_buffer != nullptr) {
      // The name and sequence id may not have been readable: clients look
      // at the message type first.
      TApplicationException x(error, message);
      out->writeMessageBegin("", apache::thrift::protocol::T_EXCEPTION, 0);
      x.write(out.get());
      out->writeMessageEnd();
      out->getTransport()->writeEnd();
      out->getTransport()->flush();
      wrote = true;
    }
    if (socket) {
      guard_->OnProcessEnd(socket, wrote);
      if (!ok) guard_->DropAfterReply(socket);
    }
    return ok;
  }

 private:
  // Lengths inside the message can claim no more than the bytes left in its
  // frame: Thrift checks strings against the protocol's limit and container
  // sizes (times the smallest element) against the transport's known
  // message size.
  static void BoundByFrame(TProtocol* in, TMemoryBuffer* buffer) {
    uint32_t left = buffer->available_read();
    auto* binary = dynamic_cast<TBinaryProtocol*>(in);
    if (binary != nullptr) {
      int32_t limit = static_cast<int32_t>(
          std::min<uint32_t>(left, std::numeric_limits<int32_t>::max()));
      binary->setStringSizeLimit(limit);
      // Generated code sizes a list before reading its elements, and an
      // element may take one byte on the wire but a hundred in memory: cap
      // the count as well, far above any fabps request (parameters of an
      // InitConfig, globs of a dataset).
      binary->setContainerSizeLimit(std::min(limit, kMaxContainerElements));
    }
    // The frame has passed max_frame_bytes, which may be above the buffer's
    // default message size (100 MiB): the message may use all of the frame.
    auto config = buffer->getConfiguration();
    if (static_cast<uint32_t>(config->getMaxMessageSize()) < left) {
      config->setMaxMessageSize(static_cast<int>(left));
    }
    buffer->readEnd();  // resets the message size accounting, keeps the data
    buffer->updateKnownMessageSize(left);
  }

  static std::string PeerOf(GuardedSocket* socket) {
    if (socket == nullptr) return "?";
    try {
      return socket->getPeerAddress() + ":" +
             std::to_string(socket->getPeerPort());
    } catch (...) {
      return "?";
    }
  }

  // Reads a fabps.Auth call and answers it. False (nothing written) when the
  // token is wrong.
  bool Authenticate(TProtocol* in, TProtocol* out, ConnectionContext* ctx,
                    GuardedSocket* socket, std::string* message) {
    using apache::thrift::protocol::TType;
    std::string name, token;
    apache::thrift::protocol::TMessageType type;
    int32_t seqid = 0;
    in->readMessageBegin(name, type, seqid);
    std::string struct_name;
    in->readStructBegin(struct_name);
    for (;;) {
      std::string field;
      TType ftype;
      int16_t fid = 0;
      in->readFieldBegin(field, ftype, fid);
      if (ftype == apache::thrift::protocol::T_STOP) break;
      if (fid == 1 && ftype == apache::thrift::protocol::T_STRING) {
        in->readString(token);
      } else {
        in->skip(ftype);
      }
      in->readFieldEnd();
    }
    in->readStructEnd();
    in->readMessageEnd();
    in->getTransport()->readEnd();
    if (type != apache::thrift::protocol::T_CALL) {
      *message = "fabps.Auth must be a call";
      return false;
    }
    if (!token_.empty() && !TokensEqual(token, token_)) {
      FABPS_LOG(WARNING) << "rpc server: refused a connection from "
                         << PeerOf(socket) << ": wrong job token";
      *message = "job token refused";
      return false;
    }
    if (ctx != nullptr) ctx->authenticated = true;
    out->writeMessageBegin(kAuthMethod, apache::thrift::protocol::T_REPLY,
                           seqid);
    out->writeStructBegin("Auth_result");
    out->writeFieldStop();
    out->writeStructEnd();
    out->writeMessageEnd();
    out->getTransport()->writeEnd();
    out->getTransport()->flush();
    return true;
  }

  std::shared_ptr<TProcessor> inner_;
  std::shared_ptr<ConnectionGuard> guard_;
  const std::string token_;
};

}  // namespace internal

namespace {

using apache::thrift::concurrency::ThreadFactory;
using apache::thrift::concurrency::ThreadManager;
using apache::thrift::protocol::TBinaryProtocolFactory;
using apache::thrift::protocol::TProtocol;
using apache::thrift::server::TNonblockingServer;
using apache::thrift::server::TServerEventHandler;
using apache::thrift::transport::TTransport;

// Tells Start() when the server listens (or that serve() ended first).
struct StartSignal {
  std::mutex mu;
  std::condition_variable cv;
  bool listening = false;
  bool ended = false;
  std::string error;
};

// Start-up signal, and the per-connection context that links a request to
// its socket.
class ServerEvents : public TServerEventHandler {
 public:
  explicit ServerEvents(std::shared_ptr<StartSignal> s) : s_(std::move(s)) {}
  void preServe() override {
    std::lock_guard<std::mutex> l(s_->mu);
    s_->listening = true;
    s_->cv.notify_all();
  }
  void* createContext(std::shared_ptr<TProtocol>,
                      std::shared_ptr<TProtocol>) override {
    return new internal::ConnectionContext();
  }
  void deleteContext(void* ctx, std::shared_ptr<TProtocol>,
                     std::shared_ptr<TProtocol>) override {
    delete static_cast<internal::ConnectionContext*>(ctx);
  }
  void processContext(void* ctx,
                      std::shared_ptr<TTransport> transport) override {
    static_cast<internal::ConnectionContext*>(ctx)->socket =
        dynamic_cast<internal::GuardedSocket*>(transport.get());
  }

 private:
  std::shared_ptr<StartSignal> s_;
};

constexpr int64_t kMaxTimeoutMs = 86'400'000;
constexpr size_t kIdleBufferLimit = 1 << 20;

// Room for max_connections sockets beside the process's other files.
void RaiseFileLimit(size_t max_connections) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  rlim_t want = static_cast<rlim_t>(max_connections) + 256;
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < want) {
    rlimit raised = r;
    raised.rlim_cur =
        r.rlim_max == RLIM_INFINITY ? want : std::min(want, r.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < want) {
    FABPS_LOG(WARNING) << "rpc server: the file limit (" << r.rlim_cur
                       << ") is below max_connections + 256; connections "
                          "past it are closed at once";
  }
}

}  // namespace

Result<std::unique_ptr<RpcServer>> RpcServer::Start(
    std::shared_ptr<apache::thrift::TProcessor> processor,
    const RpcServerOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return Status::InvalidArgument("port must be in [0, 65535]");
  }
  if (options.io_threads < 1 || options.io_threads > 64 ||
      options.worker_threads < 1 || options.worker_threads > 1024) {
    return Status::InvalidArgument(
        "io_threads must be in [1, 64], worker_threads in [1, 1024]");
  }
  if (options.max_frame_bytes < 1024 || options.max_frame_bytes > (1u << 30)) {
    return Status::InvalidArgument("max_frame_bytes must be in [1 KiB, 1 GiB]");
  }
  if (options.max_connections < 1 || options.max_connections > (1u << 20)) {
    return Status::InvalidArgument("max_connections must be in [1, 2^20]");
  }
  if (options.max_pending_request_bytes != 0 &&
      options.max_pending_request_bytes < options.max_frame_bytes) {
    return Status::InvalidArgument(
        "max_pending_request_bytes must be 0 or at least max_frame_bytes");
  }
  for (int64_t t : {options.frame_timeout_ms, options.first_request_timeout_ms,
                    options.idle_timeout_ms}) {
    if (t < 0 || t > kMaxTimeoutMs) {
      return Status::InvalidArgument(
          "frame, first-request and idle timeouts must be in [0, 1 day] ms");
    }
  }
  if (options.token.size() > kMaxTokenBytes) {
    return Status::InvalidArgument("job token longer than " +
                                   std::to_string(kMaxTokenBytes) + " bytes");
  }
  std::shared_ptr<TlsContext> tls;
  const TlsOptions& tls_files =
      options.tls.enabled() ? options.tls : EnvironmentTls();
  if (tls_files.enabled()) {
    auto made = TlsContext::ForServer(tls_files);
    if (!made.ok()) return made.status();
    tls = std::move(made).value();
  }
  RouteThriftOutputToLog();
  RaiseFileLimit(options.max_connections);
  RpcServerOptions o = options;
  if (o.max_pending_request_bytes == 0) {
    o.max_pending_request_bytes =
        std::max<size_t>(4 * o.max_frame_bytes, size_t{256} << 20);
  }
  std::unique_ptr<RpcServer> rs(new RpcServer());
  rs->guard_ = std::make_shared<internal::ConnectionGuard>(o);
  auto signal = std::make_shared<StartSignal>();
  try {
    auto socket = std::make_shared<internal::GuardedServerSocket>(
        o.host, o.port, o.max_frame_bytes, rs->guard_, tls);
    auto workers = ThreadManager::newSimpleThreadManager(
        static_cast<size_t>(o.worker_threads), o.max_queued_requests);
    workers->threadFactory(std::make_shared<ThreadFactory>());
    workers->start();
    // The frame bounds strings and containers (GuardedProcessor narrows
    // that to each frame); strict_read refuses unversioned messages.
    auto proto = std::make_shared<TBinaryProtocolFactory>(
        static_cast<int32_t>(o.max_frame_bytes),
        static_cast<int32_t>(o.max_frame_bytes),
        /*strict_read=*/true, /*strict_write=*/true);
    auto guarded = std::make_shared<internal::GuardedProcessor>(
        processor, rs->guard_,
        o.token.empty() ? EnvironmentJobToken() : o.token);
    rs->server_ =
        std::make_shared<TNonblockingServer>(guarded, proto, socket, workers);
    rs->server_->setNumIOThreads(static_cast<size_t>(o.io_threads));
    rs->server_->setMaxFrameSize(o.max_frame_bytes);
    // Give big buffers back after each reply rather than every 512.
    rs->server_->setResizeBufferEveryN(1);
    rs->server_->setIdleReadBufferLimit(kIdleBufferLimit);
    rs->server_->setIdleWriteBufferLimit(kIdleBufferLimit);
    rs->server_->setServerEventHandler(std::make_shared<ServerEvents>(signal));
  } catch (const std::exception& e) {
    return Status::Unavailable(std::string("thrift server setup: ") + e.what());
  }
  auto server = rs->server_;
  rs->serve_thread_ = std::thread([server, signal] {
    std::string error;
    try {
      server->serve();
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!error.empty()) FABPS_LOG(ERROR) << "rpc server stopped: " << error;
    std::lock_guard<std::mutex> l(signal->mu);
    signal->ended = true;
    signal->error = error;
    signal->cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> l(signal->mu);
    signal->cv.wait_for(l, std::chrono::milliseconds(o.start_timeout_ms),
                        [&] { return signal->listening || signal->ended; });
    if (!signal->listening) {
      std::string why = signal->ended
                            ? "thrift server on " + o.host + ":" +
                                  std::to_string(o.port) + ": " + signal->error
                            : "thrift server did not start in time";
      bool ended = signal->ended;
      l.unlock();
      if (ended) {
        rs->Stop();
      } else {
        // The event loop may not exist yet, so stop() could not end it:
        // leave the thread (it holds the server) rather than hang joining.
        rs->serve_thread_.detach();
        rs->stopped_ = true;
      }
      return ended ? Status::Unavailable(why) : Status::TimedOut(why);
    }
  }
  // Timeouts are checked a few times per shortest timeout, at most each
  // second and at least every 50 ms.
  int64_t shortest = kMaxTimeoutMs;
  for (int64_t t :
       {o.frame_timeout_ms, o.first_request_timeout_ms, o.idle_timeout_ms}) {
    if (t > 0) shortest = std::min(shortest, t);
  }
  int64_t tick_ms = std::clamp<int64_t>(shortest / 4, 50, 1000);
  rs->reaper_thread_ = std::thread([raw = rs.get(), tick_ms] {
    std::unique_lock<std::mutex> l(raw->reaper_mu_);
    while (!raw->reaper_cv_.wait_for(l, std::chrono::milliseconds(tick_ms),
                                     [raw] { return raw->reaper_stop_; })) {
      raw->guard_->Reap();
    }
  });
  rs->host_ = o.host;
  rs->port_ = rs->server_->getListenPort();
  return rs;
}

RpcServerStats RpcServer::stats() const {
  return guard_ ? guard_->stats() : RpcServerStats{};
}

void RpcServer::Stop() {
  std::lock_guard<std::mutex> l(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard<std::mutex> rl(reaper_mu_);
    reaper_stop_ = true;
  }
  reaper_cv_.notify_all();
  if (reaper_thread_.joinable()) reaper_thread_.join();
  if (server_) server_->stop();
  if (serve_thread_.joinable()) serve_thread_.join();
  server_.reset();
}

RpcServer::~RpcServer() { Stop(); }

}  // namespace fabps::rpc
