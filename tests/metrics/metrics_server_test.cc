// The metrics HTTP server: GET /metrics only; idle, slow and garbage
// clients do not keep a well-behaved scrape from being answered.
#include "metrics/metrics_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <vector>

#include "metrics/exposition.h"
#include "tests/util/raw_socket.h"

namespace fabps::metrics {
namespace {

class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.AddCounter("t_scrapes_total", "a counter")->Increment(7);
    MetricsServerOptions o;
    o.threads = 2;
    o.timeout_ms = 500;
    auto s = MetricsServer::Start(&registry_, o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  // A scrape with a generous deadline (the machine may be loaded).
  httplib::Result Get(const std::string& path) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_connection_timeout(10);
    c.set_read_timeout(20);
    return c.Get(path.c_str());
  }
  Registry registry_;
  std::unique_ptr<MetricsServer> server_;
};

TEST_F(MetricsServerTest, ServesTheExpositionOnGetMetrics) {
  auto res = Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), kContentType);
  EXPECT_EQ(res->body, registry_.Expose());
  EXPECT_NE(res->body.find("t_scrapes_total 7\n"), std::string::npos);
}

TEST_F(MetricsServerTest, OtherPathsAndMethodsAreRefused) {
  auto res = Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  httplib::Client c("127.0.0.1", server_->port());
  c.set_read_timeout(20);
  auto post = c.Post("/metrics", "x=1", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->body.find("t_scrapes_total"), std::string::npos);
}

TEST_F(MetricsServerTest, IdleAndGarbageClientsDoNotBlockAScrape) {
  std::vector<testing::RawSocket> idle;
  for (int i = 0; i < 6; i++) {  // more than the server's threads
    auto s = testing::RawSocket::Connect("127.0.0.1", server_->port());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    if (i % 2 == 1) {
      ASSERT_TRUE(s->Send("GET /metr").ok());  // a request that never ends
    }
    idle.push_back(std::move(*s));
  }
  auto garbage = testing::RawSocket::Connect("127.0.0.1", server_->port());
  ASSERT_TRUE(garbage.ok());
  ASSERT_TRUE(garbage->Send(std::string("\x00\xff\r\n\r\n\x16\x03", 8)).ok());
  EXPECT_TRUE(garbage->WaitClosed(20'000));
  auto res = Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  for (auto& s : idle) EXPECT_TRUE(s.WaitClosed(20'000));  // timed out
}

TEST(MetricsServerStartTest, AnAddressInUseIsAnError) {
  Registry r;
  auto first = MetricsServer::Start(&r, {});
  ASSERT_TRUE(first.ok());
  MetricsServerOptions o;
  o.port = (*first)->port();
  auto second = MetricsServer::Start(&r, o);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(std::to_string(o.port)),
            std::string::npos);
}

}  // namespace
}  // namespace fabps::metrics
