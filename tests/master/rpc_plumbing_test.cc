// thrift/rpc_server.h and thrift/rpc_client.h, in process, with the master
// service as the example service.
#include <gtest/gtest.h>
#include <thrift/transport/TTransportException.h>

#include <atomic>
#include <thread>

#include "master/journal.h"
#include "master/master_service.h"
#include "master/task_dispatcher.h"
#include "tests/master/test_dataset.h"
#include "thrift/rpc_client.h"
#include "thrift/rpc_server.h"

namespace fabps::rpc {
namespace {

using Conn = RpcConnection<master::MasterClient>;

class RpcPlumbingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = fabps::master::TaskDispatcher::Open(&journal_, &clock_, {});
    ASSERT_TRUE(d.ok());
    dispatcher_ = std::move(d).value();
    processor_ = std::make_shared<master::MasterProcessor>(
        std::make_shared<fabps::master::MasterService>(dispatcher_.get()));
  }
  std::unique_ptr<RpcServer> StartServer(RpcServerOptions o = {}) {
    auto s = RpcServer::Start(processor_, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  static Status CallStatus(Conn* c, int64_t* pass = nullptr) {
    return c->Call("Status", [&](master::MasterClient& m) {
      master::MasterStatus st;
      m.Status(st);
      if (pass) *pass = st.pass_id;
    });
  }

  fabps::master::MemoryJournal journal_;
  fabps::master::FakeClock clock_;
  std::unique_ptr<fabps::master::TaskDispatcher> dispatcher_;
  std::shared_ptr<master::MasterProcessor> processor_;
};

TEST_F(RpcPlumbingTest, PortZeroIsReportedAndServes) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(server->port(), 0);
  RpcClientOptions o;
  ASSERT_TRUE(
      ParseHostPort("127.0.0.1:" + std::to_string(server->port()), &o).ok());
  Conn c(o);
  EXPECT_TRUE(CallStatus(&c).ok());
  EXPECT_TRUE(CallStatus(&c).ok());  // the same connection again
}

TEST_F(RpcPlumbingTest, ServiceErrorsArriveAsTheirException) {
  auto server = StartServer();
  RpcClientOptions o;
  o.port = server->port();
  Conn c(o);
  master::ErrorCode::type code = master::ErrorCode::INTERNAL;
  Status s = c.Call("GetTask", [&](master::MasterClient& m) {
    try {
      master::GetTaskReply r;
      m.GetTask(r, 0, "t");
    } catch (const master::MasterError& e) {
      code = e.code;
    }
  });
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(code, master::ErrorCode::FAILED_PRECONDITION);  // no dataset yet
  EXPECT_TRUE(CallStatus(&c).ok());  // the connection is still good
}

TEST_F(RpcPlumbingTest, StopFromAnotherThreadThenCallsFailAndReconnect) {
  auto server = StartServer();
  int port = server->port();
  RpcClientOptions o;
  o.port = port;
  o.connect_timeout_ms = 500;
  o.recv_timeout_ms = 2000;
  Conn c(o);
  ASSERT_TRUE(CallStatus(&c).ok());
  std::thread stopper([&] { server->Stop(); });
  stopper.join();
  server->Stop();  // idempotent
  Status s = CallStatus(&c);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(IsRetryable(s)) << s.ToString();
  // A new server on the same port: the connection reopens by itself.
  RpcServerOptions so;
  so.port = port;
  auto again = StartServer(so);
  ASSERT_NE(again, nullptr);
  Status s2 = RetryWithBackoff({}, [&] { return CallStatus(&c); });
  EXPECT_TRUE(s2.ok()) << s2.ToString();
}

TEST_F(RpcPlumbingTest, OversizedFrameClosesOnlyThatConnection) {
  RpcServerOptions so;
  so.max_frame_bytes = 4096;
  auto server = StartServer(so);
  RpcClientOptions o;
  o.port = server->port();
  o.recv_timeout_ms = 3000;
  Conn big(o), small(o);
  std::vector<std::string> globs(100, std::string(100, 'g'));  // ~10 KB
  Status s = big.Call("SetDataset",
                      [&](master::MasterClient& m) { m.SetDataset(globs); });
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(CallStatus(&small).ok());
  EXPECT_TRUE(CallStatus(&big).ok());  // reconnected
}

TEST_F(RpcPlumbingTest, BindFailureIsUnavailable) {
  auto first = StartServer();
  RpcServerOptions so;
  so.port = first->port();
  auto second = RpcServer::Start(processor_, so);
  EXPECT_EQ(second.status().code(), Status::Code::kUnavailable)
      << second.status().ToString();
  so.port = 70000;
  EXPECT_EQ(RpcServer::Start(processor_, so).status().code(),
            Status::Code::kInvalidArgument);
}

TEST(RpcClient, ParseHostPort) {
  RpcClientOptions o;
  EXPECT_TRUE(ParseHostPort("10.0.0.1:7164", &o).ok());
  EXPECT_EQ(o.host, "10.0.0.1");
  EXPECT_EQ(o.port, 7164);
  for (const char* bad :
       {"", "host", ":1", "h:", "h:0", "h:65536", "h:12a", "h:123456"}) {
    EXPECT_FALSE(ParseHostPort(bad, &o).ok()) << bad;
  }
}

TEST(RpcClient, ErrorMapping) {
  using apache::thrift::transport::TTransportException;
  EXPECT_EQ(ThriftErrorToStatus(
                TTransportException(TTransportException::TIMED_OUT, "t"), "x")
                .code(),
            Status::Code::kTimedOut);
  EXPECT_EQ(ThriftErrorToStatus(
                TTransportException(TTransportException::NOT_OPEN, "n"), "x")
                .code(),
            Status::Code::kUnavailable);
  EXPECT_EQ(ThriftErrorToStatus(std::runtime_error("boom"), "ctx").message(),
            "ctx: boom");
}

TEST(RpcClient, RetryStopsOnNonRetryableAndAtMaxAttempts) {
  int calls = 0;
  RetryOptions r;
  r.max_attempts = 4;
  r.initial_backoff_ms = 1;
  Status s = RetryWithBackoff(r, [&] {
    ++calls;
    return Status::Unavailable("down");
  });
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(s.code(), Status::Code::kUnavailable);
  calls = 0;
  s = RetryWithBackoff(r, [&] {
    ++calls;
    return Status::InvalidArgument("no");
  });
  EXPECT_EQ(calls, 1);
  calls = 0;
  s = RetryWithBackoff(
      r, [&] { return ++calls < 3 ? Status::TimedOut("t") : Status::OK(); });
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace fabps::rpc
