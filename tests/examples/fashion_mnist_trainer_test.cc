// fabps-fashion-mnist-trainer end to end: a real fabps-master, two real
// fabps-pserver processes over tcp;ofi_rxm and two trainer processes, one
// pass over a small synthetic dataset in the Fashion-MNIST record format.
//
// Why synthetic: ten classes that each light up their own set of pixels
// (plus noise) are separable by a linear model, so one pass of about 40
// asynchronous SGD steps reaches high accuracy whatever the interleaving of
// the two trainers on a loaded machine; the check "> 0.8" is far from both
// chance (0.1) and what training reaches (about 1.0). Real Fashion-MNIST
// after one small pass would sit near 0.6-0.7 and drift with the
// interleaving, and the test would depend on the dataset package.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "recordio/writer.h"
#include "tests/master/master_process.h"
#include "tests/trainer/pserver_cluster.h"
#include "tests/util/subprocess.h"
#include "tests/util/wait_until.h"
#include "transport/fabric.h"

namespace fabps::testing {
namespace {

constexpr const char* kProvider = "tcp;ofi_rxm";
constexpr int kPixels = 784;

// The group of pixels class c lights up: a fixed scattering of the 784
// pixels into 10 groups.
int PixelGroup(int pixel) { return (pixel * 7919 + 13) % 10; }

std::string SyntheticRecord(int label, std::mt19937* rng) {
  std::string r(1 + kPixels, '\0');
  r[0] = static_cast<char>(label);
  for (int i = 0; i < kPixels; ++i) {
    int v = PixelGroup(i) == label ? 170 + (*rng)() % 86 : (*rng)() % 90;
    r[1 + i] = static_cast<char>(v);
  }
  return r;
}

// Writes `n` examples round-robin into `shards` files "<dir>/<name>-<k>"
// with small chunks (so the master cuts many tasks). Appends `bad` malformed
// records to the first shard. Returns the glob of the files.
std::string WriteShards(const std::string& dir, const std::string& name,
                        int shards, int n, int bad, uint32_t seed) {
  ::mkdir(dir.c_str(), 0755);
  std::vector<std::unique_ptr<recordio::Writer>> writers;
  recordio::WriterOptions opts;
  opts.max_chunk_bytes = 16 << 10;  // about 20 records per chunk
  for (int s = 0; s < shards; ++s) {
    auto w = recordio::Writer::Create(
        dir + "/" + name + "-" + std::to_string(s), opts);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    if (!w.ok()) return "";
    writers.push_back(std::move(*w));
  }
  std::mt19937 rng(seed);
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(
        writers[i % shards]->Append(SyntheticRecord(i % 10, &rng)).ok());
  }
  for (int b = 0; b < bad; ++b) {
    std::string wrong_label = SyntheticRecord(0, &rng);
    wrong_label[0] = static_cast<char>(10 + b);
    EXPECT_TRUE(writers[0]->Append(b % 2 ? wrong_label : "short").ok());
  }
  for (auto& w : writers) EXPECT_TRUE(w->Close().ok());
  return dir + "/" + name + "-*";
}

// The number after "key": in a JSON line, or NAN when absent or null.
double Field(const std::string& line, const std::string& key) {
  size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return NAN;
  const char* start = line.c_str() + at + key.size() + 3;
  char* end = nullptr;
  double v = std::strtod(start, &end);
  return end == start ? NAN : v;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

class FashionMnistTrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    transport::FabricOptions o;
    o.provider = kProvider;
    o.interface_address = "127.0.0.1";
    if (!transport::OpenFabric(o).ok()) {
      GTEST_SKIP() << kProvider << " not available here";
    }
  }
};

TEST_F(FashionMnistTrainerTest, TwoTrainersOnePassLearnSeparableData) {
  TempDir dir;
  const int kTrain = 1200, kTest = 300, kBad = 2;
  std::string train_glob =
      WriteShards(dir.File("train"), "synthetic-train", 4, kTrain, kBad, 1);
  WriteShards(dir.File("test"), "synthetic-test", 1, kTest, 0, 2);
  ASSERT_FALSE(HasFailure());

  std::string state = dir.File("master-state");
  auto master = MasterProcess::Start(state, dir.File("master.log"),
                                     {"--chunks-per-task", "1"});
  ASSERT_TRUE(master.ok()) << master.status().ToString();
  PServerCluster cluster(kProvider, 2, {"--interface", "127.0.0.1"});
  Status started = cluster.StartAll();
  ASSERT_TRUE(started.ok()) << started.ToString();

  // Both trainers share the master's local store (to pick the evaluator) and
  // one metrics file (to check concurrent appends). Trainer 1 finds the
  // master through the store's master/addr.
  std::string metrics = dir.File("metrics.jsonl");
  std::vector<Subprocess> trainers;
  for (int id = 0; id < 2; ++id) {
    std::vector<std::string> argv = {
        BuiltBinary("examples/fashion_mnist/fabps-fashion-mnist-trainer"),
        "--pservers",
        Join(cluster.addresses()),
        "--provider",
        kProvider,
        "--interface",
        "127.0.0.1",
        "--trainer-id",
        std::to_string(id),
        "--dataset",
        train_glob,
        "--test-data",
        dir.File("test"),
        "--passes",
        "1",
        "--batch",
        "32",
        "--rule",
        "sgd",
        "--lr",
        "0.1",
        "--seed",
        "5",
        "--block-elements",
        "16384",
        "--store",
        "local:" + state,
        "--job",
        "test",
        "--metrics-file",
        metrics,
        "--timeout-ms",
        "30000"};
    if (id == 0) {
      argv.insert(argv.end(), {"--master", master->address()});
    }
    auto p = Subprocess::Start(
        argv, dir.File("trainer-" + std::to_string(id) + ".log"));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    trainers.push_back(std::move(*p));
  }
  for (int id = 0; id < 2; ++id) {
    auto st = trainers[id].Wait(90'000);
    std::string log = ReadFileOrEmpty(trainers[id].log_path());
    ASSERT_TRUE(st.ok()) << "trainer " << id << " still running:\n" << log;
    EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0)
        << "trainer " << id << " status " << *st << ":\n"
        << log;
  }

  std::istringstream lines(ReadFileOrEmpty(metrics));
  std::string line;
  int pass_lines = 0, evaluators = 0, progress_lines = 0;
  double samples = 0, bad = 0, accuracy = NAN;
  while (std::getline(lines, line)) {
    ASSERT_TRUE(line.size() > 2 && line.front() == '{' && line.back() == '}')
        << "not one JSON object per line: " << line;
    if (line.find("\"event\":\"progress\"") != std::string::npos) {
      ++progress_lines;
      continue;
    }
    ASSERT_NE(line.find("\"event\":\"pass\""), std::string::npos) << line;
    ++pass_lines;
    EXPECT_EQ(Field(line, "pass"), 0) << line;
    samples += Field(line, "samples");
    bad += Field(line, "bad_records");
    if (line.find("test_accuracy") != std::string::npos) {
      ++evaluators;
      accuracy = Field(line, "test_accuracy");
    }
  }
  std::printf("%s", ReadFileOrEmpty(metrics).c_str());
  EXPECT_EQ(pass_lines, 2);
  EXPECT_GE(progress_lines, 2);  // at least the flush at each pass end
  EXPECT_EQ(evaluators, 1) << "exactly one trainer claims eval/trainer";
  EXPECT_EQ(samples, kTrain) << "every valid record trained on once";
  EXPECT_EQ(bad, kBad);
  EXPECT_GT(accuracy, 0.8);
}

// The value of the series `name{trainer="0"}` in a Prometheus exposition,
// NAN when it is not there.
double SeriesValue(const std::string& exposition, const std::string& name) {
  std::string key = "\n" + name + "{trainer=\"0\"} ";
  size_t at = exposition.find(key);
  if (at == std::string::npos) return NAN;
  return std::strtod(exposition.c_str() + at + key.size(), nullptr);
}

// The trainer serves its own Prometheus metrics (trainer/trainer_metrics.h):
// after one pass over the data alone, the exposition says how many pushes
// and pulls it made with which bytes, every valid example counted once, a
// push round-trip histogram with one observation per push, and the loss.
TEST_F(FashionMnistTrainerTest, TrainerServesItsPrometheusMetrics) {
  TempDir dir;
  const int kTrain = 600, kTest = 100, kBad = 1;
  std::string train_glob =
      WriteShards(dir.File("train"), "synthetic-train", 2, kTrain, kBad, 3);
  WriteShards(dir.File("test"), "synthetic-test", 1, kTest, 0, 4);
  ASSERT_FALSE(HasFailure());
  auto master =
      MasterProcess::Start(dir.File("master-state"), dir.File("master.log"),
                           {"--chunks-per-task", "1"});
  ASSERT_TRUE(master.ok()) << master.status().ToString();
  PServerCluster cluster(kProvider, 2, {"--interface", "127.0.0.1"});
  Status started = cluster.StartAll();
  ASSERT_TRUE(started.ok()) << started.ToString();

  std::string port_file = dir.File("metrics-port");
  std::string jsonl = dir.File("metrics.jsonl");
  auto trainer = Subprocess::Start(
      {BuiltBinary("examples/fashion_mnist/fabps-fashion-mnist-trainer"),
       "--pservers",
       Join(cluster.addresses()),
       "--master",
       master->address(),
       "--provider",
       kProvider,
       "--interface",
       "127.0.0.1",
       "--trainer-id",
       "0",
       "--dataset",
       train_glob,
       "--test-data",
       dir.File("test"),
       "--passes",
       "1",
       "--batch",
       "32",
       "--rule",
       "sgd",
       "--lr",
       "0.1",
       "--block-elements",
       "16384",
       "--metrics-file",
       jsonl,
       "--metrics-port-file",
       port_file,
       "--metrics-linger-seconds",
       "300",
       "--timeout-ms",
       "30000"},
      dir.File("trainer.log"));
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  // The pass is over (its line is written) while the trainer lingers.
  bool passed = WaitUntil(
      [&] {
        return ReadFileOrEmpty(jsonl).find("\"event\":\"pass\"") !=
                   std::string::npos ||
               !trainer->running();
      },
      Deadline::InMs(120'000));
  std::string log = ReadFileOrEmpty(dir.File("trainer.log"));
  ASSERT_TRUE(passed && trainer->running())
      << "no pass line while the trainer lingers:\n"
      << log;
  std::string port = ReadFileOrEmpty(port_file);
  ASSERT_FALSE(port.empty()) << log;

  httplib::Client http("127.0.0.1", std::stoi(port));
  http.set_read_timeout(20);
  auto res = http.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200);
  const std::string body = "\n" + res->body;
  const double model_bytes =
      4.0 * (784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  double pushes = SeriesValue(body, "fabps_trainer_pushes_total");
  EXPECT_GE(pushes, kTrain / 32) << body;
  EXPECT_EQ(SeriesValue(body, "fabps_trainer_push_bytes_total"),
            pushes * model_bytes)
      << body;
  EXPECT_EQ(SeriesValue(body, "fabps_trainer_push_round_trip_seconds_count"),
            pushes)
      << body;
  EXPECT_GT(SeriesValue(body, "fabps_trainer_push_round_trip_seconds_sum"), 0)
      << body;
  EXPECT_GE(SeriesValue(body, "fabps_trainer_pulls_total"), pushes) << body;
  EXPECT_EQ(SeriesValue(body, "fabps_trainer_samples_total"), kTrain) << body;
  double loss = SeriesValue(body, "fabps_trainer_loss");
  EXPECT_TRUE(std::isfinite(loss) && loss >= 0) << body;
  EXPECT_NE(body.find("# TYPE fabps_trainer_push_round_trip_seconds "
                      "histogram\n"),
            std::string::npos)
      << body;
  EXPECT_TRUE(trainer->Stop(5000).ok());
}

TEST(FashionMnistTrainerFlagsTest, BadFlagsGiveOneLineNamingTheFlag) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  std::vector<Case> cases = {
      {{"--batch", "0"}, "--batch"},
      {{"--lr", "-1"}, "--lr"},
      {{"--rule", "rmsprop"}, "--rule"},
      {{"--pservers", "nohost"}, "--pservers"},
      {{"--master", "h:99999"}, "--master"},
      {{"--job", "bad/job", "--store", "local:/tmp/x"}, "--job"},
      {{"--lr-final", "0.01"}, "--lr-decay-steps"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {
        BuiltBinary("examples/fashion_mnist/fabps-fashion-mnist-trainer"),
        "--dataset", "/nonexistent/*", "--test-data", "/nonexistent"};
    bool has_pservers = false, has_master = false;
    for (const auto& a : c.args) {
      has_pservers |= a == "--pservers";
      has_master |= a == "--master" || a == "--store";
    }
    if (!has_pservers) argv.insert(argv.end(), {"--pservers", "127.0.0.1:1"});
    if (!has_master) argv.insert(argv.end(), {"--master", "127.0.0.1:1"});
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto run = RunToExit(argv, dir.File("flags.log"), 20'000);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_EQ(run->code, 2) << c.expect;
    const std::string& out = run->output;
    EXPECT_NE(out.find(c.expect), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  }
}

}  // namespace
}  // namespace fabps::testing
