// thrift/rpc_server.h in process with small limits and short timeouts: the
// connection limit (eviction and refusal), the frame, first-request and idle
// timeouts, the pending-bytes budget, running out of file descriptors, and
// the counters. The same defenses against real daemons with their defaults:
// bad_peer_process_test.cc.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "tests/thrift/thrift_wire.h"
#include "tests/util/raw_socket.h"
#include "tests/util/wait_until.h"
#include "thrift/rpc_client.h"
#include "thrift/rpc_server.h"
#include "thrift_gen/master/Master.h"

namespace fabps::rpc {
namespace {

using fabps::testing::RawSocket;
using fabps::testing::WaitUntil;
using Clock = std::chrono::steady_clock;
namespace w = fabps::testing::wire;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t)
      .count();
}

// Status answers at once; SetDataset takes `slow_ms` (a busy handler).
class StubMaster : public master::MasterIf {
 public:
  explicit StubMaster(int slow_ms = 0) : slow_ms_(slow_ms) {}
  void SetDataset(const std::vector<std::string>&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms_));
  }
  void GetTask(master::GetTaskReply&, int64_t, const std::string&) override {}
  bool TaskFinished(int64_t, int64_t) override { return false; }
  bool TaskFailed(int64_t, int64_t) override { return false; }
  bool RequestSaveModel(const std::string&, int64_t) override { return false; }
  void Status(master::MasterStatus& st) override { st.pass_id = 7; }

 private:
  int slow_ms_;
};

class RpcServerLimitsTest : public ::testing::Test {
 protected:
  void StartServer(RpcServerOptions o, int slow_ms = 0) {
    auto s = RpcServer::Start(std::make_shared<master::MasterProcessor>(
                                  std::make_shared<StubMaster>(slow_ms)),
                              o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
  }
  RawSocket Open() {
    auto s = RawSocket::Connect("127.0.0.1", server_->port());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : RawSocket();
  }
  // Waits until the server has read `n` request frame headers since it
  // started.
  bool WaitForRequestFrames(uint64_t n) {
    return WaitUntil([&] { return server_->stats().request_frames >= n; },
                     Deadline::InMs(5000));
  }
  Status GoodCall(int recv_timeout_ms = 2000) {
    RpcClientOptions o;
    o.port = server_->port();
    o.recv_timeout_ms = recv_timeout_ms;
    RpcConnection<master::MasterClient> c(o);
    return c.Call("Status", [](master::MasterClient& m) {
      master::MasterStatus st;
      m.Status(st);
    });
  }

  std::unique_ptr<RpcServer> server_;
};

TEST_F(RpcServerLimitsTest, OptionsOutOfRangeAreRefused) {
  auto processor =
      std::make_shared<master::MasterProcessor>(std::make_shared<StubMaster>());
  auto refused = [&](auto set) {
    RpcServerOptions o;
    set(o);
    return RpcServer::Start(processor, o).status().code() ==
           Status::Code::kInvalidArgument;
  };
  EXPECT_TRUE(refused([](auto& o) { o.max_connections = 0; }));
  EXPECT_TRUE(refused([](auto& o) { o.frame_timeout_ms = -1; }));
  EXPECT_TRUE(refused([](auto& o) { o.idle_timeout_ms = 86'400'001; }));
  EXPECT_TRUE(refused([](auto& o) { o.first_request_timeout_ms = -5; }));
  EXPECT_TRUE(refused([](auto& o) {
    o.max_frame_bytes = 1 << 20;
    o.max_pending_request_bytes = 1 << 19;
  }));
}

TEST_F(RpcServerLimitsTest, FrameTimeoutClosesASlowSenderNotABusyHandler) {
  RpcServerOptions o;
  o.frame_timeout_ms = 300;
  StartServer(o, /*slow_ms=*/1000);
  RawSocket slow = Open();
  ASSERT_TRUE(slow.Send(w::Call("Status").substr(0, 10)).ok());
  auto t = Clock::now();
  EXPECT_TRUE(slow.WaitClosed(2000));
  EXPECT_GE(MsSince(t), 250);
  EXPECT_EQ(server_->stats().timed_out, 1u);
  // A handler that takes longer than the frame timeout is not cut off.
  RpcClientOptions co;
  co.port = server_->port();
  RpcConnection<master::MasterClient> c(co);
  Status s = c.Call("SetDataset",
                    [](master::MasterClient& m) { m.SetDataset({"x"}); });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(server_->stats().timed_out, 1u);
}

TEST_F(RpcServerLimitsTest, FirstRequestAndIdleTimeouts) {
  RpcServerOptions o;
  o.first_request_timeout_ms = 300;
  o.idle_timeout_ms = 800;
  StartServer(o);
  RawSocket silent = Open();
  RawSocket used = Open();
  auto t = Clock::now();
  ASSERT_TRUE(used.Send(w::Call("Status")).ok());
  std::string frame;
  ASSERT_EQ(used.WaitForFrameOrClose(2000, &frame), RawSocket::Outcome::kReply);
  EXPECT_EQ(w::ParseReply(frame).message_type,
            apache::thrift::protocol::T_REPLY);
  EXPECT_TRUE(silent.WaitClosed(2000));
  int64_t silent_ms = MsSince(t);
  EXPECT_TRUE(used.WaitClosed(3000));
  int64_t used_ms = MsSince(t);
  EXPECT_GE(silent_ms, 250);
  EXPECT_GE(used_ms, 750);  // the used connection got the idle timeout
  EXPECT_LT(silent_ms, used_ms);
  EXPECT_EQ(server_->stats().timed_out, 2u);
}

TEST_F(RpcServerLimitsTest, LimitEvictsTheIdlestThenRefusesWhenAllAreBusy) {
  RpcServerOptions o;
  o.max_connections = 4;
  o.frame_timeout_ms = 1500;
  StartServer(o);
  std::vector<RawSocket> idle;
  for (int i = 0; i < 4; i++) idle.push_back(Open());
  // A used connection ranks after never-used ones.
  ASSERT_TRUE(idle[0].Send(w::Call("Status")).ok());
  ASSERT_EQ(idle[0].WaitForFrameOrClose(2000), RawSocket::Outcome::kReply);
  RawSocket fifth = Open();
  EXPECT_TRUE(idle[1].WaitClosed(2000)) << "the oldest never-used one goes";
  EXPECT_FALSE(idle[0].WaitClosed(100));
  EXPECT_EQ(server_->stats().evicted, 1u);
  // Now make every connection busy (mid-frame): a new one is refused.
  std::vector<RawSocket*> busy = {&idle[0], &idle[2], &idle[3], &fifth};
  for (RawSocket* s : busy) ASSERT_TRUE(s->Send(w::U32(100) + "ab").ok());
  // Busy once the server has read their headers (and the first call's).
  ASSERT_TRUE(WaitForRequestFrames(1 + busy.size()));
  RawSocket sixth = Open();
  EXPECT_TRUE(sixth.WaitClosed(1000));
  EXPECT_EQ(server_->stats().refused, 1u);
  // Once the frame timeout frees them, good clients get in again.
  for (RawSocket* s : busy) EXPECT_TRUE(s->WaitClosed(4000));
  Status s = GoodCall();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(RpcServerLimitsTest, PendingBytesBudget) {
  RpcServerOptions o;
  o.max_frame_bytes = 64 << 10;
  o.max_pending_request_bytes = 128 << 10;
  StartServer(o);
  RawSocket a = Open(), b = Open(), c = Open();
  ASSERT_TRUE(a.Send(w::U32(60 << 10) + "x").ok());
  ASSERT_TRUE(b.Send(w::U32(60 << 10) + "x").ok());
  ASSERT_TRUE(WaitForRequestFrames(2)) << "a's and b's frames reserved";
  ASSERT_TRUE(c.Send(w::U32(60 << 10) + "x").ok());
  EXPECT_TRUE(c.WaitClosed(2000)) << "a third 60 KiB frame passes 128 KiB";
  EXPECT_EQ(server_->stats().over_pending_bytes, 1u);
  // Closing a frees its share.
  a.Close();
  ASSERT_TRUE(WaitUntil([&] { return server_->stats().closed >= 2; },
                        Deadline::InMs(5000)))
      << "the server closed c and a";
  RawSocket d = Open();
  ASSERT_TRUE(d.Send(w::U32(60 << 10) + "x").ok());
  EXPECT_FALSE(d.WaitClosed(300));
  Status s = GoodCall();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(RpcServerLimitsTest, BadRequestsAreCounted) {
  StartServer({});
  for (uint8_t type : {2, 3}) {
    RawSocket s = Open();
    ASSERT_TRUE(s.Send(w::Call("Status", "", type)).ok());
    std::string frame;
    ASSERT_EQ(s.WaitForFrameOrClose(2000, &frame), RawSocket::Outcome::kReply);
    EXPECT_EQ(w::ParseReply(frame).exception_type,
              apache::thrift::TApplicationException::INVALID_MESSAGE_TYPE);
    EXPECT_TRUE(s.WaitClosed(2000));
  }
  EXPECT_EQ(server_->stats().bad_requests, 2u);
}

// TNonblockingServer never serves a frame of length 0 (it waits for one more
// byte, then closes), so such a peer must not be taken for one waiting for
// its reply: that one is never timed out nor evicted, and max_connections of
// them would lock every client out. The timeouts stay at their defaults
// (10 s), far past the waits here: only the guard's refusal frees the slots.
TEST_F(RpcServerLimitsTest, EmptyFramesHoldNoConnectionSlot) {
  RpcServerOptions o;
  o.max_connections = 4;
  StartServer(o);
  std::vector<RawSocket> bad;
  for (int i = 0; i < 4; i++) {
    bad.push_back(Open());
    if (i == 0) {
      // A used connection first (one the limit would evict last), then
      // the empty frame.
      ASSERT_TRUE(bad[0].Send(w::Call("Status")).ok());
      ASSERT_EQ(bad[0].WaitForFrameOrClose(2000), RawSocket::Outcome::kReply);
    }
    if (i == 1) {
      // The header a byte at a time.
      for (int b = 0; b < 3; b++) {
        ASSERT_TRUE(bad[1].Send(w::Byte(0)).ok());
        ASSERT_EQ(bad[1].WaitForFrameOrClose(20), RawSocket::Outcome::kTimedOut)
            << "closed before the header was whole";
      }
      ASSERT_TRUE(bad[1].Send(w::Byte(0)).ok());
    } else {
      ASSERT_TRUE(bad[i].Send(w::U32(0)).ok());
    }
  }
  // Once the server has read the four empty headers (and the first call),
  // a good client is served at once, and every bad peer is closed.
  EXPECT_TRUE(WaitForRequestFrames(5));
  Status s = GoodCall();
  EXPECT_TRUE(s.ok()) << s.ToString();
  for (size_t i = 0; i < bad.size(); i++) {
    EXPECT_TRUE(bad[i].WaitClosed(2000)) << "peer " << i << " still open";
  }
  EXPECT_EQ(server_->stats().timed_out, 0u);
  EXPECT_EQ(server_->stats().bad_frames, 4u);
}

// Frames too short for a message header are still requests Thrift hands to
// the processor: each is answered with an error, then closed (none may sit
// counted as in flight like an empty one would).
TEST_F(RpcServerLimitsTest, FramesShorterThanAMessageAreAnsweredThenClosed) {
  StartServer({});
  const std::string header = w::MessageHeader("Status", 1);
  for (size_t n = 1; n < header.size(); n++) {
    RawSocket s = Open();
    ASSERT_TRUE(s.Send(w::Framed(header.substr(0, n))).ok());
    std::string frame;
    ASSERT_EQ(s.WaitForFrameOrClose(2000, &frame), RawSocket::Outcome::kReply)
        << "frame of " << n << " bytes";
    EXPECT_EQ(w::ParseReply(frame).exception_type,
              apache::thrift::TApplicationException::PROTOCOL_ERROR)
        << "frame of " << n << " bytes";
    EXPECT_TRUE(s.WaitClosed(2000)) << "frame of " << n << " bytes";
  }
  EXPECT_EQ(server_->stats().bad_requests, header.size() - 1);
  EXPECT_EQ(server_->stats().bad_frames, 0u);
}

// max_frame_bytes may pass Thrift's default message size (100 MiB, a
// TConfiguration of each connection's buffer): a frame the limit admits must
// be read whole, not refused part way as "MaxMessageSize reached".
TEST_F(RpcServerLimitsTest, FramesUpToTheLimitAreReadPastThriftsDefault) {
  RpcServerOptions o;
  o.max_frame_bytes = size_t{112} << 20;
  StartServer(o);
  // An unknown method is skipped field by field, the string whole; the
  // answer is UNKNOWN_METHOD and the connection serves on.
  const uint32_t n = 101u << 20;
  const std::string head =
      w::MessageHeader("NoSuchMethod", 1) + w::Field(w::kString, 1) + w::U32(n);
  std::string call = w::U32(static_cast<uint32_t>(head.size() + n + 1)) + head;
  call.append(n, 'x');
  call += w::Byte(0);  // the arguments' T_STOP
  RawSocket s = Open();
  ASSERT_TRUE(s.Send(call).ok());
  std::string frame;
  ASSERT_EQ(s.WaitForFrameOrClose(10000, &frame), RawSocket::Outcome::kReply);
  w::Reply r = w::ParseReply(frame);
  EXPECT_EQ(r.exception_type,
            apache::thrift::TApplicationException::UNKNOWN_METHOD)
      << r.message;
  ASSERT_TRUE(s.Send(w::Call("Status")).ok());
  ASSERT_EQ(s.WaitForFrameOrClose(2000, &frame), RawSocket::Outcome::kReply);
  EXPECT_EQ(w::ParseReply(frame).message_type,
            apache::thrift::protocol::T_REPLY);
}

// Out of file descriptors, accept() fails: the server must go on serving
// (Thrift's own accept path threw out of the event loop and stopped it).
TEST_F(RpcServerLimitsTest, RunningOutOfFileDescriptorsDoesNotStopServing) {
  StartServer({});
  // Start() returns once the server listens (thrift's preServe), before its
  // event loop has made its notification pipe: one call served first, so
  // that the limit below starves the accepts, not the server's start-up
  // (CI once saw "can't create notification pipe" and no server at all).
  Status first = GoodCall();
  ASSERT_TRUE(first.ok()) << first.ToString();
  // Client and server share this process's descriptor table: the client's
  // sockets are made before the limit drops, so only the server's accepts
  // can run out (connecting needs no new descriptor).
  constexpr int kClients = 64;
  std::vector<int> fds;
  for (int i = 0; i < kClients; i++) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    timeval tv{0, 500000};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    fds.push_back(fd);
  }
  // The limit drops to just above the highest open descriptor, the holes
  // below it are filled with ballast, and four are given back: the server
  // has four descriptors for all 64 connections.
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  int highest = 0;
  for (int fd = 0; fd < 65536 && fd < static_cast<int>(saved.rlim_cur); fd++)
    highest = fcntl(fd, F_GETFD) != -1 ? fd : highest;
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(highest + 1);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> ballast;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;)
    ballast.push_back(fd);
  low.rlim_cur += 4;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int connected = 0;
  for (int fd : fds) {
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0)
      connected++;
  }
  // The accepts past the four descriptors must fail: wait for the server
  // to refuse one (then restore the limit, before any assertion can end the
  // test).
  bool hit = WaitUntil([&] { return server_->stats().refused >= 1; },
                       Deadline::InMs(5000));
  for (int fd : fds) ::close(fd);
  for (int fd : ballast) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_TRUE(hit) << "the limit was never hit";
  // Served after every connection queued before it.
  Status s = GoodCall();
  EXPECT_TRUE(s.ok()) << s.ToString();
  RpcServerStats st = server_->stats();
  std::printf("clients connected %d, server accepted %llu, refused %llu\n",
              connected, static_cast<unsigned long long>(st.accepted),
              static_cast<unsigned long long>(st.refused));
  EXPECT_GT(connected, 4);
}

}  // namespace
}  // namespace fabps::rpc
