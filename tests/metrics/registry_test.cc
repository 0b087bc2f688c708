// The text exposition against the format's spec: HELP/TYPE lines, escaping,
// number formatting, cumulative histogram buckets, read-outs.
#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "metrics/exposition.h"

namespace fabps::metrics {
namespace {

TEST(ExpositionTest, EscapesHelpAndLabelValues) {
  EXPECT_EQ(EscapeHelp("a\\b\nc\"d"), "a\\\\b\\nc\"d");  // " stays in HELP
  EXPECT_EQ(EscapeLabelValue("a\\b\nc\"d"), "a\\\\b\\nc\\\"d");
  EXPECT_EQ(FormatLabels({}), "");
  EXPECT_EQ(FormatLabels({{"a", "x"}, {"b", "q\""}}), "{a=\"x\",b=\"q\\\"\"}");
}

TEST(ExpositionTest, FormatsValuesShortestAndSpecials) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(42), "42");
  EXPECT_EQ(FormatValue(60), "60");  // not 6e+01
  EXPECT_EQ(FormatValue(1000000), "1000000");
  EXPECT_EQ(FormatValue(0.005), "0.005");
  EXPECT_EQ(FormatValue(-2.5), "-2.5");
  EXPECT_EQ(FormatValue(1e21), "1e+21");
  EXPECT_EQ(FormatValue(123456789012.0), "123456789012");
  EXPECT_EQ(FormatValue(INFINITY), "+Inf");
  EXPECT_EQ(FormatValue(-INFINITY), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(std::strtod(FormatValue(0.1 + 0.2).c_str(), nullptr), 0.1 + 0.2);
}

TEST(ExpositionTest, NameRules) {
  EXPECT_TRUE(ValidMetricName("fabps_x:y_total"));
  EXPECT_FALSE(ValidMetricName("1x"));
  EXPECT_FALSE(ValidMetricName("a-b"));
  EXPECT_FALSE(ValidMetricName(""));
  EXPECT_TRUE(ValidLabelName("index"));
  EXPECT_FALSE(ValidLabelName("__name"));
  EXPECT_FALSE(ValidLabelName("a:b"));
}

TEST(RegistryTest, CountersAndGaugesWithHelpTypeAndLabels) {
  Registry r;
  Counter* a =
      r.AddCounter("t_requests_total", "requests\nserved", {{"code", "200"}});
  Counter* b =
      r.AddCounter("t_requests_total", "requests\nserved", {{"code", "5\"00"}});
  Gauge* g = r.AddGauge("t_temperature_celsius", "a gauge");
  a->Increment();
  a->Increment(2);
  b->Increment(0.5);
  g->Set(3);
  g->Add(-4.25);
  EXPECT_EQ(r.Expose(),
            "# HELP t_requests_total requests\\nserved\n"
            "# TYPE t_requests_total counter\n"
            "t_requests_total{code=\"200\"} 3\n"
            "t_requests_total{code=\"5\\\"00\"} 0.5\n"
            "# HELP t_temperature_celsius a gauge\n"
            "# TYPE t_temperature_celsius gauge\n"
            "t_temperature_celsius -1.25\n");
}

TEST(RegistryTest, HistogramBucketsAreCumulativeWithSumAndCount) {
  Registry r;
  Histogram* h = r.AddHistogram("t_latency_seconds", "latency", {0.5, 1, 2},
                                {{"op", "push"}});
  for (double v : {0.25, 0.5, 0.75, 1.5, 8.0}) h->Observe(v);
  EXPECT_EQ(r.Expose(),
            "# HELP t_latency_seconds latency\n"
            "# TYPE t_latency_seconds histogram\n"
            "t_latency_seconds_bucket{op=\"push\",le=\"0.5\"} 2\n"
            "t_latency_seconds_bucket{op=\"push\",le=\"1\"} 3\n"
            "t_latency_seconds_bucket{op=\"push\",le=\"2\"} 4\n"
            "t_latency_seconds_bucket{op=\"push\",le=\"+Inf\"} 5\n"
            "t_latency_seconds_sum{op=\"push\"} 11\n"
            "t_latency_seconds_count{op=\"push\"} 5\n");
}

TEST(RegistryTest, ReadOutsSeeOneRefreshPerExposition) {
  Registry r;
  int refreshes = 0;
  double source = 1;
  double snapshot = 0;
  r.AddRefresh([&] {
    refreshes++;
    snapshot = source;
  });
  r.AddReadOut(Type::kCounter, "t_applied_total", "applied", {{"i", "0"}},
               [&] { return snapshot; });
  r.AddReadOut(Type::kGauge, "t_double", "twice", {},
               [&] { return 2 * snapshot; });
  source = 21;
  std::string text = r.Expose();
  EXPECT_EQ(refreshes, 1);
  EXPECT_NE(text.find("t_applied_total{i=\"0\"} 21\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("t_double 42\n"), std::string::npos) << text;
}

TEST(RegistryTest, ConcurrentUpdatesAreAllCounted) {
  Registry r;
  Counter* c = r.AddCounter("t_events_total", "events");
  Histogram* h =
      r.AddHistogram("t_size_bytes", "sizes", ExponentialBuckets(1, 2, 4));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; i++) {
        c->Increment();
        h->Observe(3);
      }
    });
  }
  std::thread reader([&] {
    for (int i = 0; i < 50; i++) r.Expose();
  });
  for (auto& t : threads) t.join();
  reader.join();
  EXPECT_EQ(c->value(), 40000);
  Histogram::Snapshot s = h->Read();
  EXPECT_EQ(s.count, 40000u);
  EXPECT_EQ(s.cumulative[1], 0u);      // le 2
  EXPECT_EQ(s.cumulative[2], 40000u);  // le 4
  EXPECT_EQ(s.sum, 120000);
}

TEST(RegistryDeathTest, BadRegistrationsAreProgrammingErrors) {
  EXPECT_DEATH(
      {
        Registry r;
        r.AddCounter("bad-name", "x");
      },
      "bad metric name");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddCounter("t_x", "x", {{"le", "1"}});
      },
      "bad label name");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddCounter("t_x", "x");
        r.AddGauge("t_x", "x");
      },
      "registered twice");
  EXPECT_DEATH(
      {
        Registry r;
        r.AddCounter("t_x", "x", {{"a", "1"}});
        r.AddCounter("t_x", "x", {{"a", "1"}});
      },
      "registered twice");
  EXPECT_DEATH({ Histogram h({1, 1}); }, "increase strictly");
}

}  // namespace
}  // namespace fabps::metrics
