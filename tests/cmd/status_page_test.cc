// The launcher's status page server without a job: its routes, the JSON it
// was given, and which log names it serves (only plain *.log files directly
// in the run directory, symbolic links resolved); RateHistory's thinning.
#include "cmd/launch/status_page.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cmd/launch/job_view.h"
#include "tests/util/subprocess.h"

namespace fabps::launch {
namespace {

using testing::TempDir;

class StatusPageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(run_.File("run/sub"));
    std::ofstream(run_.File("run/pserver-0.log")) << "I pserver-0 serving\n";
    std::ofstream(run_.File("run/sub/inner.log")) << "inner\n";
    std::ofstream(run_.File("run/store")) << "not a log\n";
    std::ofstream(run_.File("secret.log")) << "outside the run dir\n";
    ASSERT_EQ(::symlink(run_.File("secret.log").c_str(),
                        run_.File("run/link.log").c_str()),
              0);
    auto page = StatusPage::Start("127.0.0.1", 0, run_.File("run"));
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    page_ = std::move(*page);
  }
  httplib::Result Get(const std::string& path) {
    httplib::Client c("127.0.0.1", page_->port());
    c.set_connection_timeout(10);
    c.set_read_timeout(20);
    return c.Get(path.c_str());
  }
  TempDir run_;
  std::unique_ptr<StatusPage> page_;
};

TEST_F(StatusPageTest, ServesThePageAndThePublishedJson) {
  auto page = Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("status.json"), std::string::npos);
  // Offline: nothing fetched from another origin.
  EXPECT_EQ(page->body.find("https://"), std::string::npos);
  EXPECT_EQ(page->body.find("src=\"http"), std::string::npos);

  JobView v;
  v.job = "j";
  v.health = "running";
  v.pass_results.push_back({1, 0.5, 0.8, 3});
  v.pass_results.push_back({2, 0.4, NAN, 3});
  v.processes.push_back(
      {"pserver-1", "pserver", 1, "running", 42, 0, "", "pserver-1.log"});
  page_->Publish(ToJson(v).dump());
  auto json = Get("/status.json");
  ASSERT_TRUE(json);
  EXPECT_EQ(json->status, 200);
  EXPECT_EQ(json->get_header_value("Cache-Control"), "no-store");
  auto j = nlohmann::json::parse(json->body);
  EXPECT_EQ(j["job"], "j");
  EXPECT_EQ(j["pass_results"][0]["accuracy"], 0.8);
  EXPECT_TRUE(j["pass_results"][1]["accuracy"].is_null());  // NaN: null
  EXPECT_TRUE(j["loss"].is_null());
  EXPECT_EQ(j["processes"][0]["index"], 1);
  EXPECT_EQ(j["processes"][0]["log"], "pserver-1.log");
}

TEST_F(StatusPageTest, ServesOnlyLogsOfTheRunDirectory) {
  auto ok = Get("/logs/pserver-0.log");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "I pserver-0 serving\n");
  for (const char* bad :
       {"/logs/", "/logs/store", "/logs/sub/inner.log", "/logs/link.log",
        "/logs/../secret.log", "/logs/..%2Fsecret.log", "/logs/missing.log",
        "/logs/.hidden.log", "/logs/%2Fetc%2Fpasswd.log", "/logs/a%00.log",
        "/logs/pserver-0.log/", "/nothing"}) {
    auto res = Get(bad);
    ASSERT_TRUE(res) << bad;
    EXPECT_EQ(res->status, 404) << bad;
    EXPECT_EQ(res->body.find("outside"), std::string::npos) << bad;
    EXPECT_EQ(res->body.find("inner"), std::string::npos) << bad;
  }
  EXPECT_FALSE(RunDirLogFile(run_.File("run"), "link.log").ok());
  EXPECT_TRUE(RunDirLogFile(run_.File("run"), "pserver-0.log").ok());
}

TEST_F(StatusPageTest, ALargeLogIsServedFromItsTail) {
  {
    std::ofstream big(run_.File("run/big.log"));
    std::string line(1023, 'x');
    for (int i = 0; i < 5 * 1024; i++) big << line << '\n';  // 5 MiB
    big << "the last line\n";
  }
  auto res = Get("/logs/big.log");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_LT(res->body.size(), size_t{4} * 1024 * 1024 + 200);
  EXPECT_EQ(res->body.rfind("the last line\n"),
            res->body.size() - std::string("the last line\n").size());
  EXPECT_EQ(res->body.rfind("[big.log: its first ", 0), 0u);
}

TEST_F(StatusPageTest, OtherMethodsAreRefused) {
  httplib::Client c("127.0.0.1", page_->port());
  c.set_connection_timeout(10);
  c.set_read_timeout(20);
  auto res = c.Post("/status.json", "x", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  auto del = c.Delete("/logs/pserver-0.log");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
  EXPECT_TRUE(std::filesystem::exists(run_.File("run/pserver-0.log")));
}

TEST(StatusPageStartTest, NeedsTheRunDirectory) {
  TempDir d;
  EXPECT_FALSE(StatusPage::Start("127.0.0.1", 0, d.File("none")).ok());
}

TEST(RateHistoryTest, KeepsTheWholeRunInBoundedPoints) {
  RateHistory h(64, 1.0);
  for (int t = 0; t < 1000; t++) h.Add({double(t), double(t), 0, 0});
  ASSERT_LE(h.points().size(), 64u);
  EXPECT_GE(h.points().size(), 16u);
  EXPECT_EQ(h.points().front().t, 0);  // the start stays
  // and the end is recent: points are at most about 2 * 1000 / 64 apart.
  EXPECT_GT(h.points().back().t, 999 - 64);
  for (size_t i = 1; i < h.points().size(); i++)
    EXPECT_GT(h.points()[i].t, h.points()[i - 1].t);
}

}  // namespace
}  // namespace fabps::launch
