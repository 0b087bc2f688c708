// The trainers' metrics lines (trainer/metrics_line.h,
// docs/formats/metrics_line.md): the C++ encoder's bytes against the
// format's examples, the parser on them and on what it must refuse, the
// log's appends, and the PyTorch trainer's writer
// (examples/fashion_mnist_torch/metrics.py) read by the same parser.
#include "trainer/metrics_line.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"
#include "trainer/metrics_log.h"

namespace fabps::trainer {
namespace {

// The format's examples, byte for byte (docs/formats/metrics_line.md).
const char kProgress[] =
    R"({"event":"progress","trainer":1,"pass":0,"samples":1280,)"
    R"("loss":0.625,"samples_per_sec":2500.5})";
const char kPass[] =
    R"({"event":"pass","trainer":0,"pass":2,"samples":30016,"loss":0.375,)"
    R"("bad_records":0,"test_accuracy":0.875,"test_loss":0.4375,)"
    R"("seconds":12.5,"elapsed_seconds":40.25})";

MetricsLine ExamplePass() {
  return MetricsLine::Pass(0, 2, 30016, 0.375, 0)
      .Add(metrics_key::kTestAccuracy, 0.875)
      .Add(metrics_key::kTestLoss, 0.4375)
      .Timing(12.5, 40.25);
}

TEST(MetricsLine, EncodesTheFormatsExamples) {
  EXPECT_EQ(MetricsLine::Progress(1, 0, 1280, 0.625, 2500.5).str(), kProgress);
  EXPECT_EQ(ExamplePass().str(), kPass);
  EXPECT_EQ(MetricsLine::Saved(3, "/r/model.safetensors").str(),
            R"({"event":"saved","trainer":3,"model":"/r/model.safetensors"})");
  EXPECT_EQ(MetricsLine::Evaluate("m", 10000).str(),
            R"({"event":"evaluate","model":"m","test_examples":10000})");
}

TEST(MetricsLine, NonFiniteIsNullAndStringsAreEscaped) {
  MetricsLine line("x");
  line.Add("nan", std::nan("")).Add("text", std::string("a\"b\\c\n"));
  EXPECT_EQ(line.str(), R"({"event":"x","nan":null,"text":"a\"b\\c\u000a"})");
}

TEST(MetricsLine, ParsesTheFormatsExamples) {
  auto p = ParseMetricsLine(kProgress);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->event, metrics_event::kProgress);
  EXPECT_EQ(p->trainer, 1);
  EXPECT_EQ(p->pass, 0);
  EXPECT_EQ(p->samples, 1280);
  EXPECT_EQ(p->loss, 0.625);
  EXPECT_EQ(p->samples_per_sec, 2500.5);

  auto q = ParseMetricsLine(kPass);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->event, metrics_event::kPass);
  EXPECT_EQ(q->pass, 2);
  EXPECT_EQ(q->loss, 0.375);
  EXPECT_EQ(q->Number(metrics_key::kTestAccuracy), 0.875);
  EXPECT_EQ(q->Number(metrics_key::kTestLoss), 0.4375);
  EXPECT_EQ(q->seconds, 12.5);
  EXPECT_EQ(q->Number(metrics_key::kElapsedSeconds), 40.25);
  EXPECT_FALSE(q->Has(metrics_key::kTestAuc));
  EXPECT_TRUE(std::isnan(q->Number(metrics_key::kTestAuc)));
}

TEST(MetricsLine, RoundTripsEveryEvent) {
  auto saved = ParseMetricsLine(MetricsLine::Saved(4, "a b.st").str());
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(saved->event, metrics_event::kSaved);
  EXPECT_EQ(saved->trainer, 4);
  EXPECT_EQ(saved->model, "a b.st");
  auto eval = ParseMetricsLine(MetricsLine::Evaluate("m", 7).str());
  ASSERT_TRUE(eval.ok());
  EXPECT_EQ(eval->Number(metrics_key::kTestExamples), 7);
  auto empty = ParseMetricsLine(MetricsLine::Pass(0, 0, 0, NAN, 0).str());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->Has(metrics_key::kLoss));
  EXPECT_TRUE(std::isnan(empty->loss));
}

TEST(MetricsLine, IgnoresUnknownKeysAndRefusesMalformedLines) {
  auto later = ParseMetricsLine(
      R"({"event":"pass","pass":1,"new_field":[1,2],"test_auc":0.75})");
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->Number(metrics_key::kTestAuc), 0.75);
  for (const char* bad :
       {"", "not json", "[1,2]", R"({"pass":1})", R"({"event":3})",
        R"({"event":"pass","pass":"one"})", R"({"event":"pass","pass":1.5})",
        R"({"event":"progress","loss":"high"})",
        R"({"event":"pass","pass":1)"}) {
    EXPECT_FALSE(ParseMetricsLine(bad).ok()) << bad;
  }
}

TEST(MetricsLog, AppendsWholeLines) {
  testing::TempDir dir;
  auto log = MetricsLog::Open(dir.File("m.jsonl"));
  ASSERT_TRUE(log.ok());
  (*log)->Write(MetricsLine("a").Add("n", int64_t{1}));
  (*log)->Write(MetricsLine("b").Add("n", int64_t{2}));
  EXPECT_EQ(testing::ReadFileOrEmpty(dir.File("m.jsonl")),
            "{\"event\":\"a\",\"n\":1}\n{\"event\":\"b\",\"n\":2}\n");
  EXPECT_FALSE(MetricsLog::Open(dir.File("missing/m.jsonl")).ok());
}

// The PyTorch trainer's writer, given the examples' values, writes the
// examples' bytes, which this parser reads.
TEST(MetricsLine, PythonWriterWritesTheSameLines) {
  const std::string python = "/usr/bin/python3";
  if (::access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << python;
  testing::TempDir dir;
  const std::string script =
      "import sys\n"
      "sys.path.insert(0, sys.argv[1])\n"
      "import metrics\n"
      "log = metrics.MetricsLog(sys.argv[2])\n"
      "log.write(metrics.progress_line(1, 0, 1280, 0.625, 2500.5))\n"
      "log.write(metrics.pass_line(0, 2, 30016, 0.375, 0,\n"
      "    {'test_accuracy': 0.875, 'test_loss': 0.4375},\n"
      "    seconds=12.5, elapsed_seconds=40.25))\n"
      "log.write(metrics.pass_line(0, 3, 0, float('nan'), 0,\n"
      "    seconds=1.5, elapsed_seconds=2.5))\n";
  auto p = testing::Subprocess::Start(
      {python, "-c", script,
       std::string(FABPS_SOURCE_DIR) + "/examples/fashion_mnist_torch",
       dir.File("m.jsonl")},
      dir.File("out"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto st = p->Wait(60000);
  ASSERT_TRUE(st.ok() && WIFEXITED(*st) && WEXITSTATUS(*st) == 0)
      << testing::ReadFileOrEmpty(dir.File("out"));
  std::istringstream in(testing::ReadFileOrEmpty(dir.File("m.jsonl")));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], kProgress);
  EXPECT_EQ(lines[1], kPass);
  EXPECT_EQ(lines[2],
            MetricsLine::Pass(0, 3, 0, NAN, 0).Timing(1.5, 2.5).str());
  for (const std::string& line : lines)
    EXPECT_TRUE(ParseMetricsLine(line).ok()) << line;
}

}  // namespace
}  // namespace fabps::trainer
