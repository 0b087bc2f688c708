// RpcConnection::Call with a deadline against a peer that never answers (a
// listening socket nobody reads: the kernel completes the connect, no reply
// ever comes): the call gives up when the deadline passes, not when the
// longer configured socket timeout does; without a deadline the configured
// timeout holds; a deadline already passed fails before connecting.
#include <gtest/gtest.h>

#include <chrono>

#include "base/deadline.h"
#include "tests/util/raw_socket.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/master/Master.h"

namespace fabps::rpc {
namespace {

using fabps::testing::SilentListener;

using Clock = std::chrono::steady_clock;

int64_t MsOf(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

class RpcClientDeadlineTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(peer_.ok()) << "no loopback listener"; }
  // One Status call on a fresh connection; its duration in *ms.
  Status CallStatus(const Deadline* deadline, int64_t* ms) {
    RpcClientOptions o;
    o.port = peer_.port();
    o.recv_timeout_ms = kConfiguredMs;
    o.send_timeout_ms = kConfiguredMs;
    RpcConnection<master::MasterClient> c(o);
    auto fn = [](master::MasterClient& m) {
      master::MasterStatus st;
      m.Status(st);
    };
    auto start = Clock::now();
    Status s =
        deadline ? c.Call("Status", *deadline, fn) : c.Call("Status", fn);
    *ms = MsOf(Clock::now() - start);
    return s;
  }

  static constexpr int kConfiguredMs = 4000;
  SilentListener peer_;
};

TEST_F(RpcClientDeadlineTest, ACallEndsAtItsDeadline) {
  Deadline d = Deadline::InMs(300);
  int64_t ms = 0;
  Status s = CallStatus(&d, &ms);
  EXPECT_EQ(s.code(), Status::Code::kTimedOut) << s.ToString();
  EXPECT_LT(ms, kConfiguredMs / 2) << "waited for the socket timeout";
}

TEST_F(RpcClientDeadlineTest, WithoutADeadlineTheConfiguredTimeoutHolds) {
  int64_t ms = 0;
  Status s = CallStatus(nullptr, &ms);
  EXPECT_EQ(s.code(), Status::Code::kTimedOut) << s.ToString();
  EXPECT_GE(ms, kConfiguredMs - 100);
}

TEST_F(RpcClientDeadlineTest, APassedDeadlineFailsAtOnce) {
  Deadline d = Deadline::InMs(0);
  int64_t ms = 0;
  Status s = CallStatus(&d, &ms);
  EXPECT_EQ(s.code(), Status::Code::kTimedOut) << s.ToString();
  EXPECT_NE(s.message().find("deadline passed"), std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace fabps::rpc
