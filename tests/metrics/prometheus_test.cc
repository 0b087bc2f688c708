// A real Prometheus (Debian's prometheus) scrapes a real fabps-pserver's
// metrics port: after a trainer's pushes, Prometheus's HTTP API returns
// fabps_pserver_pushes_applied_total equal to the pushes made. Skips when
// prometheus is not installed or the fabric does not work here.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "tests/trainer/pserver_cluster.h"
#include "tests/transport/provider_params.h"
#include "tests/util/subprocess.h"
#include "tests/util/wait_until.h"
#include "trainer/pserver_client.h"

namespace fabps {
namespace {

constexpr char kPrometheus[] = "/usr/bin/prometheus";
constexpr char kProvider[] = "tcp;ofi_rxm";
constexpr uint64_t kBlock = 256;
constexpr int kPushes = 7;
constexpr int64_t kMs = 30000;

// The value of `query` (an instant vector of one series) from Prometheus's
// HTTP API on `port`; "" while there is none (not scraped yet).
std::string QueryOne(int port, const std::string& query, std::string* raw) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  c.set_read_timeout(5);
  auto res = c.Get("/api/v1/query", httplib::Params{{"query", query}}, {});
  if (!res || res->status != 200) return "";
  *raw = res->body;
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  if (j.is_discarded() || j.value("status", "") != "success") return "";
  const auto& result = j["data"]["result"];
  if (!result.is_array() || result.size() != 1) return "";
  return result[0]["value"][1].get<std::string>();
}

// True once Prometheus on `port` answers that it is ready.
bool Ready(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  c.set_read_timeout(5);
  auto res = c.Get("/-/ready");
  return res && res->status == 200;
}

TEST(PrometheusTest, ScrapesPushesAppliedFromARealPserver) {
  if (::access(kPrometheus, X_OK) != 0)
    GTEST_SKIP() << kPrometheus << " not installed (Debian package prometheus)";
  std::string skip;
  if (!transport::testing::OpenOrSkipReason(kProvider, &skip))
    GTEST_SKIP() << skip;

  testing::TempDir dir;
  std::string metrics_port_file = dir.File("metrics.port");
  testing::PServerCluster cluster(kProvider, 1,
                                  {"--metrics-port-file", metrics_port_file});
  ASSERT_TRUE(cluster.StartAll().ok());
  std::string port_text = testing::ReadFileOrEmpty(metrics_port_file);
  ASSERT_FALSE(port_text.empty()) << "no " << metrics_port_file;
  int metrics_port = std::stoi(port_text);

  // One parameter of one block: each push is one applied block.
  trainer::PServerClientOptions o;
  o.addresses = cluster.addresses();
  o.provider = kProvider;
  o.interface_address = "127.0.0.1";
  o.block_elements = kBlock;
  o.init_wait_ms = kMs;
  auto c = trainer::PServerClient::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  trainer::ParamSpec spec{"w", trainer::DType::kFloat32, {kBlock}};
  std::vector<float> values(kBlock, 1.0f);
  ASSERT_TRUE((*c)->BeginInitParams(true).value());
  ASSERT_TRUE(
      (*c)->InitParam(spec, values.data(), values.size() * sizeof(float)).ok());
  ASSERT_TRUE((*c)->FinishInitParams().ok());
  for (int i = 0; i < kPushes; i++) {
    auto h = (*c)->SendGrads({{"w", values.data(), values.size() * 4}},
                             Deadline::InMs(kMs));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    ASSERT_TRUE((*c)->Wait(*h, Deadline::InMs(kMs)).ok());
  }

  std::string config = dir.File("prometheus.yml");
  {
    std::ofstream f(config);
    f << "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n"
      << "scrape_configs:\n  - job_name: fabps\n    static_configs:\n"
      << "      - targets: ['127.0.0.1:" << metrics_port << "']\n";
  }
  // A port chosen free can be taken before Prometheus binds it: then it
  // exits saying so, and starts again on another.
  int web_port = -1;
  std::string log;
  Result<testing::Subprocess> prom = Status::Unavailable("not started");
  for (int attempt = 0; attempt < 3; ++attempt) {
    web_port = testing::FreeTcpPort();
    log = dir.File("prometheus-" + std::to_string(attempt) + ".log");
    prom = testing::Subprocess::Start(
        {kPrometheus, "--config.file=" + config,
         "--storage.tsdb.path=" + dir.File("tsdb"),
         "--web.listen-address=127.0.0.1:" + std::to_string(web_port)},
        log);
    ASSERT_TRUE(prom.ok()) << prom.status().ToString();
    testing::WaitUntil([&] { return !prom->running() || Ready(web_port); },
                       Deadline::InMs(60'000));
    if (prom->running() || testing::ReadFileOrEmpty(log).find(
                               "address already in use") == std::string::npos)
      break;
  }

  std::string got, raw;
  bool seen = testing::WaitUntil(
      [&] {
        if (!prom->running()) return true;  // reported below
        got =
            QueryOne(web_port, "sum(fabps_pserver_pushes_applied_total)", &raw);
        return got == std::to_string(kPushes);
      },
      Deadline::InMs(60'000));
  ASSERT_TRUE(prom->running())
      << "prometheus exited: " << testing::ReadFileOrEmpty(log);
  EXPECT_TRUE(seen) << "last value '" << got << "', last answer " << raw
                    << "\nprometheus log:\n"
                    << testing::ReadFileOrEmpty(log);
  // The target is healthy and the histogram-free families came through too.
  EXPECT_EQ(QueryOne(web_port, "up{job=\"fabps\"}", &raw), "1") << raw;
  EXPECT_EQ(QueryOne(web_port, "fabps_pserver_bytes_applied_total", &raw),
            std::to_string(kPushes * kBlock * sizeof(float)))
      << raw;
  // The apply histogram counted every push; the control plane's counters
  // saw at least the client's connections.
  EXPECT_EQ(QueryOne(web_port, "fabps_pserver_apply_seconds_count", &raw),
            std::to_string(kPushes))
      << raw;
  EXPECT_EQ(QueryOne(web_port,
                     "fabps_pserver_apply_seconds_bucket{le=\"+Inf\"}", &raw),
            std::to_string(kPushes))
      << raw;
  const std::string accepted =
      QueryOne(web_port, "fabps_pserver_rpc_connections_accepted_total", &raw);
  ASSERT_FALSE(accepted.empty()) << raw;
  EXPECT_GE(std::stod(accepted), 1.0) << raw;
  EXPECT_EQ(
      QueryOne(web_port,
               "fabps_pserver_rpc_connections_refused_total{reason=\"full\"}",
               &raw),
      "0")
      << raw;
  ASSERT_TRUE(prom->Stop().ok());
}

}  // namespace
}  // namespace fabps
