// Bad peers against the control-plane port of a real fabps-master and a real
// fabps-pserver (thrift/rpc_server.h with its default options): each case
// checks that the bad connection is answered with a TApplicationException or
// closed within a bounded time, and that afterwards a good client is served
// in a few seconds by a process that is still alive.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "tests/master/master_process.h"
#include "tests/thrift/thrift_wire.h"
#include "tests/trainer/pserver_cluster.h"
#include "tests/util/raw_socket.h"
#include "tests/util/subprocess.h"
#include "thrift/rpc_client.h"
#include "thrift/rpc_server.h"
#include "thrift_gen/master/Master.h"
#include "thrift_gen/pserver/PServer.h"

namespace fabps::testing {
namespace {

using apache::thrift::TApplicationException;
using Clock = std::chrono::steady_clock;
namespace w = wire;

const rpc::RpcServerOptions kDefaults;  // what the daemons run with
// Slack on top of a server timeout: the reaper's tick (at most 1 s) and a
// loaded machine.
constexpr int kSlackMs = 3000;
// A refusal that needs no timeout (bad length, bad request) arrives within:
constexpr int kPromptMs = 3000;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t)
      .count();
}

// Peak resident memory of `pid` in KiB (VmHWM), -1 when unreadable.
int64_t PeakRssKiB(pid_t pid) {
  std::string s = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/status");
  size_t at = s.find("VmHWM:");
  if (at == std::string::npos) return -1;
  return std::strtoll(s.c_str() + at + 6, nullptr, 10);
}

class BadPeerTest : public ::testing::TestWithParam<std::string> {
 protected:
  bool is_master() const { return GetParam() == "master"; }

  void SetUp() override {
    if (is_master()) {
      auto m = MasterProcess::Start(dir_.File("master-state"),
                                    dir_.File("master.log"));
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      master_ = std::move(m).value();
      port_ = master_.port;
    } else {
      cluster_ = std::make_unique<PServerCluster>("tcp;ofi_rxm", 1);
      Status s = cluster_->Start(0);
      ASSERT_TRUE(s.ok()) << s.ToString();
      port_ = std::stoi(cluster_->addresses()[0].substr(10));
    }
    ExpectGoodClientServed("before");
    rss_before_kib_ = PeakRssKiB(proc().pid());
  }

  void TearDown() override {
    if (port_ == 0) return;
    std::printf("[ %s ] sent %d frames (%lld bytes) on %d connections\n",
                GetParam().c_str(), frames_, static_cast<long long>(bytes_),
                connections_);
    RecordProperty("frames_sent", frames_);
    RecordProperty("connections", connections_);
    EXPECT_TRUE(proc().running()) << "the server died";
    int64_t peak = PeakRssKiB(proc().pid());
    std::printf("[ %s ] peak RSS %lld KiB (%lld KiB before the bad peers)\n",
                GetParam().c_str(), static_cast<long long>(peak),
                static_cast<long long>(rss_before_kib_));
    // No bad peer here may make the server hold much more than a frame.
    EXPECT_LT(peak - rss_before_kib_, 128 * 1024) << "peak RSS grew";
    proc().Stop();
  }

  Subprocess& proc() { return is_master() ? master_.proc : cluster_->proc(0); }

  // A good client: the generated client through RpcConnection, one status
  // call, retried for up to `within_ms`.
  Status GoodCall(int within_ms = 5000) {
    rpc::RpcClientOptions o;
    o.port = port_;
    o.connect_timeout_ms = 1000;
    o.send_timeout_ms = o.recv_timeout_ms = 2000;
    rpc::RetryOptions r;
    r.max_attempts = 1 << 10;
    r.deadline = Deadline::InMs(within_ms);
    if (is_master()) {
      rpc::RpcConnection<rpc::master::MasterClient> c(o);
      return rpc::RetryWithBackoff(r, [&] {
        return c.Call("Status", [](rpc::master::MasterClient& m) {
          rpc::master::MasterStatus st;
          m.Status(st);
        });
      });
    }
    rpc::RpcConnection<rpc::pserver::PServerClient> c(o);
    return rpc::RetryWithBackoff(r, [&] {
      return c.Call("GetStatus", [](rpc::pserver::PServerClient& p) {
        rpc::pserver::PsStatus st;
        p.GetStatus(st);
      });
    });
  }
  void ExpectGoodClientServed(const char* when) {
    auto t = Clock::now();
    Status s = GoodCall();
    EXPECT_TRUE(s.ok()) << when << ": " << s.ToString();
    EXPECT_TRUE(proc().running()) << when << ": the server died";
    std::printf("[ %s ] good client served %s in %lld ms\n", GetParam().c_str(),
                when, static_cast<long long>(MsSince(t)));
  }

  RawSocket Open() {
    auto s = RawSocket::Connect("127.0.0.1", port_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    connections_++;
    return s.ok() ? std::move(s).value() : RawSocket();
  }
  // Sends bytes that make `frames` frames (or parts of them).
  void Send(RawSocket& s, const std::string& bytes, int frames = 1) {
    frames_ += frames;
    bytes_ += static_cast<int64_t>(bytes.size());
    // A send may fail once the server has closed: that is allowed.
    (void)s.Send(bytes);
  }

  // The server must answer with an exception, or close, within timeout_ms.
  // Returns the reply (parsed=false when it closed).
  w::Reply ExpectErrorOrClose(RawSocket& s, int timeout_ms,
                              const std::string& what) {
    auto t = Clock::now();
    std::string frame;
    RawSocket::Outcome o = s.WaitForFrameOrClose(timeout_ms, &frame);
    EXPECT_NE(o, RawSocket::Outcome::kTimedOut)
        << what << ": neither answered nor closed in " << timeout_ms << " ms";
    w::Reply r;
    if (o == RawSocket::Outcome::kReply) {
      r = w::ParseReply(frame);
      EXPECT_TRUE(r.parsed) << what << ": " << r.message;
      EXPECT_EQ(r.message_type, apache::thrift::protocol::T_EXCEPTION)
          << what << ": answered with something else than an exception";
    }
    EXPECT_LE(MsSince(t), timeout_ms + 500) << what;
    return r;
  }
  // An error reply of type `type`, then the end of the connection.
  void ExpectErrorThenClose(RawSocket& s, int type, const std::string& what) {
    w::Reply r = ExpectErrorOrClose(s, kPromptMs, what);
    EXPECT_EQ(r.exception_type, type) << what << ": " << r.message;
    EXPECT_TRUE(s.WaitClosed(kPromptMs)) << what << ": not closed after";
  }

  // A call whose first argument starts a string of `length` bytes
  // (master: SetDataset(list<string>) with one element; pserver:
  // InitBlock(i64, i32, binary) with the binary).
  std::string CallWithStringLength(uint32_t length) const {
    std::string args =
        is_master() ? w::Field(w::kList, 1) + w::Byte(w::kString) + w::U32(1)
                    : w::Field(w::kString, 3);
    return w::Framed(
        w::MessageHeader(is_master() ? "SetDataset" : "InitBlock", 1) + args +
        w::U32(length) + "abc");
  }
  // A call whose argument starts a container of `count` elements
  // (master: SetDataset's list<string>; pserver: InitParams' InitConfig
  // map<string, UpdateRule>).
  // `filler` bytes follow the container header inside the frame.
  std::string CallWithContainerSize(uint32_t count, size_t filler = 0) const {
    std::string args = is_master()
                           ? w::Field(w::kList, 1) + w::Byte(w::kString)
                           : w::Field(w::kStruct, 2) + w::Field(w::kMap, 3) +
                                 w::Byte(w::kString) + w::Byte(w::kStruct);
    return w::Framed(
        w::MessageHeader(is_master() ? "SetDataset" : "InitParams", 1) + args +
        w::U32(count) + "abcd" + std::string(filler, '\0'));
  }

  TempDir dir_;
  MasterProcess master_;
  std::unique_ptr<PServerCluster> cluster_;
  int port_ = 0;
  int frames_ = 0;
  int connections_ = 0;
  int64_t bytes_ = 0;
  int64_t rss_before_kib_ = 0;
};

TEST_P(BadPeerTest, RandomBytes) {
  std::mt19937 rng(20261202);
  std::vector<RawSocket> socks;
  std::vector<std::string> what;
  for (int i = 0; i < 64; i++) {
    std::string body(1 + rng() % 300, '\0');
    for (char& c : body) c = static_cast<char>(rng());
    // Half wholly random (the length prefix too), half a right length
    // around random content.
    std::string bytes = i % 2 == 0 ? body : w::Framed(body);
    socks.push_back(Open());
    Send(socks.back(), bytes);
    what.push_back("random bytes #" + std::to_string(i));
  }
  // A random length below the frame limit leaves the server waiting for
  // the rest of the frame: frame_timeout_ms bounds that.
  auto deadline = Clock::now() + std::chrono::milliseconds(
                                     kDefaults.frame_timeout_ms + kSlackMs);
  for (size_t i = 0; i < socks.size(); i++) {
    int left = static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 Clock::now())
               .count()));
    ExpectErrorOrClose(socks[i], left, what[i]);
  }
  ExpectGoodClientServed("after random bytes");
}

TEST_P(BadPeerTest, TruncatedFrameThenClose) {
  for (int i = 0; i < 32; i++) {
    RawSocket s = Open();
    // Header and a part of the body, then gone.
    Send(s, w::Call(is_master() ? "Status" : "GetStatus").substr(0, 4 + i % 9));
    s.Close();
    RawSocket h = Open();
    // Part of the header only.
    Send(h, w::U32(100).substr(0, 1 + i % 3));
    h.ShutdownWrite();
    EXPECT_TRUE(h.WaitClosed(kPromptMs)) << "half header, then end #" << i;
  }
  ExpectGoodClientServed("after truncated frames");
}

TEST_P(BadPeerTest, HugeLengthPrefix) {
  for (uint32_t length : {0x7fffffffu, 0xffffffffu, 0x80000000u,
                          static_cast<uint32_t>((1u << 30) + 1)}) {
    RawSocket s = Open();
    Send(s, w::U32(length) + "x");
    auto t = Clock::now();
    EXPECT_TRUE(s.WaitClosed(kPromptMs)) << "length " << length;
    EXPECT_LT(MsSince(t), kPromptMs);
  }
  ExpectGoodClientServed("after huge length prefixes");
}

// An empty frame is never served by Thrift: the connection must be closed
// at once, not held as a request in flight (which no timeout reaches).
TEST_P(BadPeerTest, EmptyFramesAreClosedAtOnce) {
  std::vector<RawSocket> socks;
  for (int i = 0; i < 8; i++) {
    socks.push_back(Open());
    Send(socks.back(), w::U32(0));
  }
  for (size_t i = 0; i < socks.size(); i++) {
    auto t = Clock::now();
    EXPECT_TRUE(socks[i].WaitClosed(kPromptMs)) << "empty frame #" << i;
    EXPECT_LT(MsSince(t), kPromptMs);
  }
  ExpectGoodClientServed("after empty frames");
}

TEST_P(BadPeerTest, WrongMethodNameIsAnsweredAndTheConnectionServesOn) {
  RawSocket s = Open();
  Send(s, w::Call("NoSuchMethod", w::Field(w::kString, 1) + w::U32(3) + "abc"));
  w::Reply r = ExpectErrorOrClose(s, kPromptMs, "wrong method name");
  EXPECT_EQ(r.exception_type, TApplicationException::UNKNOWN_METHOD)
      << r.message;
  // The same connection then serves a real call.
  Send(s, w::Call(is_master() ? "Status" : "GetStatus"));
  std::string frame;
  ASSERT_EQ(s.WaitForFrameOrClose(kPromptMs, &frame),
            RawSocket::Outcome::kReply);
  EXPECT_EQ(w::ParseReply(frame).message_type,
            apache::thrift::protocol::T_REPLY);
  ExpectGoodClientServed("after a wrong method name");
}

TEST_P(BadPeerTest, WrongMessageTypeOrVersion) {
  const std::string method = is_master() ? "Status" : "GetStatus";
  for (uint8_t type : {2 /* reply */, 3 /* exception */, 7 /* none */}) {
    RawSocket s = Open();
    Send(s, w::Call(method, "", type));
    ExpectErrorThenClose(s, TApplicationException::INVALID_MESSAGE_TYPE,
                         "message type " + std::to_string(type));
  }
  // Version 2, and an unversioned (old, non-strict) message.
  for (const std::string& header :
       {w::U32(0x80020001u) + w::U32(method.size()) + method + w::U32(1),
        w::U32(method.size()) + method + w::Byte(1) + w::U32(1)}) {
    RawSocket s = Open();
    Send(s, w::Framed(header + w::Byte(0)));
    ExpectErrorThenClose(s, TApplicationException::PROTOCOL_ERROR,
                         "bad version");
  }
  ExpectGoodClientServed("after wrong message types");
}

TEST_P(BadPeerTest, LengthsOf2To31InsideAFrame) {
  struct Case {
    std::string what;
    std::string bytes;
  };
  std::vector<Case> cases = {
      // The method name's length.
      {"name length 2^31",
       w::Framed(w::U32(0x80010001u) + w::U32(0x80000000u) + "Status")},
      {"name length 2^31-1",
       w::Framed(w::U32(0x80010001u) + w::U32(0x7fffffffu) + "Status")},
      // A string argument, and a container.
      {"string length 2^31", CallWithStringLength(0x80000000u)},
      {"string length 2^31-1", CallWithStringLength(0x7fffffffu)},
      {"string length 2^24", CallWithStringLength(1u << 24)},
      {"container size 2^31-1", CallWithContainerSize(0x7fffffffu)},
      {"container size 2^24", CallWithContainerSize(1u << 24)},
      // A count the frame's bytes could cover: refused all the same (each
      // element's minimum wire size, and the server's cap on elements).
      {"container size 2^22 in a 4 MiB frame",
       CallWithContainerSize(1u << 22, size_t{4} << 20)},
      // In a frame the server does not know: skipped field by field.
      {"skipped string 2^31-1",
       w::Call("NoSuchMethod", w::Field(w::kString, 1) + w::U32(0x7fffffffu))},
  };
  for (const Case& c : cases) {
    RawSocket s = Open();
    Send(s, c.bytes);
    ExpectErrorThenClose(s, TApplicationException::PROTOCOL_ERROR, c.what);
  }
  ExpectGoodClientServed("after 2^31 lengths");
}

// Polls the sockets until `enough` of them are closed (all, by default) or
// `timeout_ms` passes; marks the ones the server closed. Returns how many
// are closed.
size_t WaitForCloses(std::vector<RawSocket>& socks, std::vector<bool>* closed,
                     int timeout_ms, size_t enough = SIZE_MAX) {
  auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  closed->resize(socks.size(), false);
  auto count = [&] {
    size_t n = 0;
    for (bool c : *closed) n += c ? 1 : 0;
    return n;
  };
  for (;;) {
    if (count() >= enough) break;
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    for (size_t i = 0; i < socks.size(); i++) {
      if ((*closed)[i]) continue;
      fds.push_back({socks[i].fd(), POLLIN, 0});
      index.push_back(i);
    }
    int left = static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(end -
                                                                 Clock::now())
               .count()));
    if (fds.empty() || left == 0) break;
    int r = ::poll(fds.data(), fds.size(), left);
    if (r <= 0) break;
    for (size_t k = 0; k < fds.size(); k++) {
      if (fds[k].revents == 0) continue;
      if (socks[index[k]].WaitClosed(0)) (*closed)[index[k]] = true;
    }
  }
  return count();
}

TEST_P(BadPeerTest, IdleConnectionsBeyondTheLimit) {
  const size_t max = kDefaults.max_connections;
  const size_t extra = 64;
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  rlim_t want = max + extra + 256;
  if (r.rlim_cur < want) {
    r.rlim_cur = std::min(want, r.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
  if (r.rlim_cur < want) GTEST_SKIP() << "file limit too low: " << r.rlim_cur;

  auto start = Clock::now();
  std::vector<RawSocket> socks;
  for (size_t i = 0; i < max + extra; i++) socks.push_back(Open());
  // The idle timeout of the last connection starts no earlier than this.
  auto opened = Clock::now();
  std::printf("[ %s ] %zu idle connections open in %lld ms\n",
              GetParam().c_str(), socks.size(),
              static_cast<long long>(MsSince(start)));
  // Past the limit every new connection evicts an old idle one at once:
  // `extra` closes come well before the first-request timeout could close
  // any (a loaded server may still be accepting the last ones).
  ASSERT_LT(kPromptMs + kSlackMs, kDefaults.first_request_timeout_ms);
  std::vector<bool> closed;
  size_t n = WaitForCloses(socks, &closed, kPromptMs + kSlackMs, extra);
  EXPECT_GE(n, extra) << "connections past the limit were not closed";
  EXPECT_LE(socks.size() - n, max) << "more connections than the limit";
  // A good client gets in while the rest still hold their slots.
  ExpectGoodClientServed("with max_connections idle peers");
  // The others never sent a request: they go after the first-request
  // timeout.
  int left = static_cast<int>(kDefaults.first_request_timeout_ms + kSlackMs -
                              MsSince(opened));
  n = WaitForCloses(socks, &closed, std::max(left, 0));
  EXPECT_EQ(n, socks.size())
      << "idle connections still open after " << MsSince(opened) << " ms";
  ExpectGoodClientServed("after the idle peers");
}

TEST_P(BadPeerTest, SlowClientOneBytePerSecond) {
  const std::string call = w::Call(is_master() ? "Status" : "GetStatus");
  // 1 byte a second: the call would take call.size() s, more than the frame
  // timeout allows.
  ASSERT_GT(static_cast<int64_t>(call.size()) * 1000,
            kDefaults.frame_timeout_ms + kSlackMs);
  RawSocket s = Open();
  frames_++;
  auto start = Clock::now();
  size_t sent = 0;
  RawSocket::Outcome o = RawSocket::Outcome::kTimedOut;
  bool checked_good = false;
  while (sent < call.size()) {
    bytes_++;
    if (!s.Send(call.substr(sent, 1)).ok()) {
      o = RawSocket::Outcome::kClosed;
      break;
    }
    sent++;
    o = s.WaitForFrameOrClose(1000);
    if (o != RawSocket::Outcome::kTimedOut) break;
    if (!checked_good && sent == 3) {
      // Others are served while the slow client trickles.
      ExpectGoodClientServed("during the slow client");
      checked_good = true;
    }
  }
  int64_t took = MsSince(start);
  std::printf("[ %s ] slow client: %zu of %zu bytes sent, %s after %lld ms\n",
              GetParam().c_str(), sent, call.size(), OutcomeName(o),
              static_cast<long long>(took));
  EXPECT_EQ(o, RawSocket::Outcome::kClosed);
  EXPECT_LT(sent, call.size());
  EXPECT_LE(took, kDefaults.frame_timeout_ms + kSlackMs);
  ExpectGoodClientServed("after the slow client");
}

INSTANTIATE_TEST_SUITE_P(Daemons, BadPeerTest,
                         ::testing::Values("master", "pserver"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fabps::testing
