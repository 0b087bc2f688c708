// The model's life through the real daemons: fabps-launch trains a short
// job whose save-election winner writes <run-dir>/model.safetensors;
// `fabps-fashion-mnist-trainer --evaluate` gives exactly the accuracy the
// job printed for its last pass; fabps-export --checkpoints rebuilds the
// same tensors offline from the pservers' final checkpoints; a new job
// started with --init-from begins at that model's accuracy (not chance);
// and a model whose tensors do not fit is refused by name before anything
// is initialized; the same for the CTR job's hashed table. A job's pserver
// count changes across restarts (2 -> 3 -> 1, re-sharded by fabps-reshard and
// by the launcher) with the parameters and optimizer state bit-identical, and
// while it runs (fabps-reshard
// --run-dir) with its trainers following.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "safetensors/safetensors.h"
#include "tests/util/launcher_argv.h"
#include "tests/util/subprocess.h"

namespace fabps {
namespace {

using testing::Subprocess;
using testing::TempDir;

// Runs `argv` to its end (at most `timeout_ms`); its output in *out.
int RunToEnd(const TempDir& dir, const std::vector<std::string>& argv,
             const std::string& name, std::string* out,
             int timeout_ms = 240000) {
  auto p = Subprocess::Start(argv, dir.File(name + ".out"));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return -1;
  auto st = p->Wait(timeout_ms);
  EXPECT_TRUE(st.ok()) << name << " still running after " << timeout_ms;
  *out = testing::ReadFileOrEmpty(dir.File(name + ".out"));
  return st.ok() && WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
}

int Launch(const TempDir& dir, const std::string& run,
           const std::vector<std::string>& extra, std::string* out,
           int pservers = 2, int passes = 1) {
  testing::LauncherJob job;
  job.passes = passes;
  job.pservers = pservers;
  job.trainers = 1;
  job.run = run;
  job.save_period = 2;
  std::vector<std::string> argv = testing::LauncherArgv(dir, job, extra);
  return RunToEnd(dir, argv, run, out);
}

// The value of "test_accuracy" in the last line of `text` that has it, as
// printed.
std::string LastAccuracy(const std::string& text) {
  std::regex acc(R"("test_accuracy":([0-9.eE+-]+))");
  std::string found;
  for (std::sregex_iterator it(text.begin(), text.end(), acc), end; it != end;
       ++it) {
    found = (*it)[1];
  }
  return found;
}

// The two safetensors files hold the same `count` tensors, bit for bit.
void ExpectSameTensors(const std::string& path_a, const std::string& path_b,
                       size_t count) {
  auto a = safetensors::SafetensorsFile::Read(path_a);
  auto b = safetensors::SafetensorsFile::Read(path_b);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(a->tensors().size(), count) << path_a;
  ASSERT_EQ(b->tensors().size(), count) << path_b;
  for (const auto& t : a->tensors()) {
    const auto* u = b->Find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->shape, t.shape) << t.name;
    EXPECT_TRUE(a->Data(t) == b->Data(*u))
        << t.name << " differs between " << path_a << " and " << path_b;
  }
}

std::string Evaluate(const TempDir& dir, const std::string& model) {
  std::string out;
  int code =
      RunToEnd(dir,
               {testing::BuiltBinary("examples/fashion_mnist/"
                                     "fabps-fashion-mnist-trainer"),
                "--evaluate", model, "--test-data", dir.File("data/test/*")},
               "evaluate", &out, 120000);
  EXPECT_EQ(code, 0) << out;
  return LastAccuracy(out);
}

TEST(ModelLifecycle, ExportEvaluateExportOfflineAndStartFromIt) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(Launch(dir, "run1", {}, &out), 0) << out;
  const std::string model = dir.File("run1/model.safetensors");
  EXPECT_NE(out.find("model:         " + model), std::string::npos) << out;
  const std::string metrics =
      testing::ReadFileOrEmpty(dir.File("run1/trainer-0.metrics"));
  EXPECT_NE(metrics.find(R"("event":"saved")"), std::string::npos) << metrics;
  const std::string job_accuracy = LastAccuracy(metrics);
  ASSERT_FALSE(job_accuracy.empty()) << metrics;

  // The exported file scores what the job printed for its last pass.
  EXPECT_EQ(Evaluate(dir, model), job_accuracy);

  // Offline from the pservers' checkpoints (written as they stopped): the
  // same tensors, bit for bit.
  std::string exported;
  ASSERT_EQ(RunToEnd(dir,
                     {testing::BuiltBinary("cmd/export/fabps-export"),
                      "--checkpoints", dir.File("run1/checkpoints"), "-o",
                      dir.File("offline.safetensors")},
                     "export", &exported),
            0)
      << exported;
  ExpectSameTensors(model, dir.File("offline.safetensors"), 6);

  // A job started from the model, with a learning rate too small to move
  // it: its first pass scores about the model's accuracy; from random
  // values it would be near chance (0.1).
  ASSERT_EQ(Launch(dir, "run2",
                   {"--init-from", model, "--rule", "sgd", "--lr", "0.000001",
                    "--lr-final", "0.000001"},
                   &out),
            0)
      << out;
  EXPECT_NE(testing::ReadFileOrEmpty(dir.File("run2/trainer-0.log"))
                .find("initializing the parameters (from " + model),
            std::string::npos);
  const std::string started = LastAccuracy(
      testing::ReadFileOrEmpty(dir.File("run2/trainer-0.metrics")));
  ASSERT_FALSE(started.empty());
  EXPECT_NEAR(std::stod(started), std::stod(job_accuracy), 0.02);
  EXPECT_GT(std::stod(job_accuracy), 0.5);
}

// The launcher's closing table, "pass loss accuracy seconds" rows:
// {loss, accuracy} of the last row.
std::pair<double, double> LastPassRow(const std::string& out) {
  std::regex row(R"(\n(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+[0-9.]+)");
  std::pair<double, double> last = {-1, -1};
  for (std::sregex_iterator it(out.begin(), out.end(), row), end; it != end;
       ++it) {
    last = {std::stod((*it)[2]), std::stod((*it)[3])};
  }
  return last;
}

// 2 -> 3 -> 1 pservers across restarts of one job (its run directory and
// local store): by hand with fabps-reshard, then by the launcher itself when
// --pservers differs from the job's count. The model is bit-identical after
// each change: offline from the new checkpoints (values and Adam state), and
// as the new count of real pservers serve it (the trainer of a restart with
// nothing left to train pulls it from them and saves it). Then training
// goes on from it with one pserver.
TEST(ModelLifecycle, PserverCountChangesTwoToThreeToOneBitIdentical) {
  TempDir dir;
  const std::string run = dir.File("run");
  const std::string model = run + "/model.safetensors";
  std::string out;
  ASSERT_EQ(Launch(dir, "run", {}, &out), 0) << out;
  const auto first = LastPassRow(out);
  ASSERT_GT(first.second, 0.5) << out;

  auto export_offline = [&](const std::string& name) {
    std::string said;
    EXPECT_EQ(
        RunToEnd(
            dir,
            {testing::BuiltBinary("cmd/export/fabps-export"), "--checkpoints",
             run + "/checkpoints", "-o", dir.File(name + ".safetensors"),
             "--with-optimizer-state", dir.File(name + ".state.safetensors")},
            "export-" + name, &said),
        0)
        << said;
  };
  auto expect_as_before = [&](const std::string& name) {
    ExpectSameTensors(dir.File("two.safetensors"),
                      dir.File(name + ".safetensors"), 6);
    // Adam: two state tensors per parameter.
    ExpectSameTensors(dir.File("two.state.safetensors"),
                      dir.File(name + ".state.safetensors"), 12);
  };
  export_offline("two");
  ExpectSameTensors(model, dir.File("two.safetensors"), 6);

  const std::string reshard = testing::BuiltBinary("cmd/reshard/fabps-reshard");
  const std::string store = "local:" + run + "/store";
  std::string said;
  EXPECT_EQ(RunToEnd(dir,
                     {reshard, "--store", store, "--job", "fashion-mnist",
                      "--num-pservers", "2"},
                     "reshard-same", &said),
            1);
  EXPECT_NE(said.find("the job already has 2 pservers"), std::string::npos)
      << said;
  EXPECT_EQ(
      RunToEnd(dir, {reshard, "--num-pservers", "2"}, "reshard-none", &said),
      2);
  ASSERT_EQ(RunToEnd(dir,
                     {reshard, "--store", store, "--job", "fashion-mnist",
                      "--num-pservers", "3"},
                     "reshard", &said),
            0)
      << said;
  EXPECT_NE(said.find("re-sharded 2 -> 3 pservers"), std::string::npos) << said;
  export_offline("three");
  expect_as_before("three");

  // Three real pservers recover from the new files and serve the model.
  std::filesystem::remove(model);
  ASSERT_EQ(Launch(dir, "run", {}, &out, 3), 0) << out;
  EXPECT_NE(testing::ReadFileOrEmpty(run + "/pserver-2.log")
                .find("pserver 2 of 3 serving"),
            std::string::npos);
  ExpectSameTensors(dir.File("two.safetensors"), model, 6);

  // The launcher re-shards by itself: 3 -> 1.
  std::filesystem::remove(model);
  ASSERT_EQ(Launch(dir, "run", {}, &out, 1), 0) << out;
  EXPECT_NE(out.find("re-sharding the job's checkpoints: 3 -> 1 pservers"),
            std::string::npos)
      << out;
  ExpectSameTensors(dir.File("two.safetensors"), model, 6);
  export_offline("one");
  expect_as_before("one");

  // Training goes on from there: pass 2 on one pserver starts where pass 1
  // ended (a model started afresh would train to pass 1's loss again).
  ASSERT_EQ(Launch(dir, "run", {}, &out, 1, 2), 0) << out;
  const auto second = LastPassRow(out);
  EXPECT_LT(second.first, first.first) << out;
  EXPECT_GT(second.second, first.second - 0.02) << out;
}

// A running job re-sharded twice (2 -> 3 -> 1) by one command each: the
// launcher stops its pservers, re-cuts their checkpoints and starts the new
// count; the trainers stay up and follow the new layout; every pass trains
// all its tasks and the job ends as well trained as usual.
TEST(ModelLifecycle, RunningJobResizedByOneCommand) {
  TempDir dir;
  const std::string run = dir.File("run");
  testing::LauncherJob shape;
  shape.passes = 8;  // two resizes must come before the end (1.5 s a pass)
  shape.save_period = 2;
  std::vector<std::string> argv = testing::LauncherArgv(dir, shape, {});
  auto job = Subprocess::Start(argv, dir.File("job.out"));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  // Training has started once a trainer reported progress.
  Deadline started = Deadline::InMs(180000);
  while (testing::ReadFileOrEmpty(run + "/trainer-0.metrics")
             .find("\"progress\"") == std::string::npos) {
    ASSERT_FALSE(started.Expired())
        << testing::ReadFileOrEmpty(dir.File("job.out"));
    ASSERT_TRUE(job->running())
        << testing::ReadFileOrEmpty(dir.File("job.out"));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int count : {3, 1}) {
    std::string said;
    ASSERT_EQ(RunToEnd(dir,
                       {testing::BuiltBinary("cmd/reshard/fabps-reshard"),
                        "--run-dir", run, "--num-pservers",
                        std::to_string(count), "--timeout", "120"},
                       "resize-" + std::to_string(count), &said, 150000),
              0)
        << said << testing::ReadFileOrEmpty(dir.File("job.out"));
    EXPECT_NE(said.find(" -> " + std::to_string(count) + " pservers"),
              std::string::npos)
        << said;
  }
  auto code = job->Wait(300000);
  ASSERT_TRUE(code.ok()) << "the job did not end";
  const std::string out = testing::ReadFileOrEmpty(dir.File("job.out"));
  ASSERT_TRUE(WIFEXITED(*code) && WEXITSTATUS(*code) == 0) << out;
  EXPECT_NE(out.find("the job runs on 3 pservers"), std::string::npos) << out;
  EXPECT_NE(out.find("the job runs on 1 pservers"), std::string::npos) << out;
  EXPECT_NE(out.find("| 1 pservers, 2 trainers |"), std::string::npos) << out;
  EXPECT_EQ(out.find("supervisor: trainer"), std::string::npos)
      << "a trainer ended instead of following:\n"
      << out;
  for (int t = 0; t < 2; ++t) {
    EXPECT_NE(
        testing::ReadFileOrEmpty(run + "/trainer-" + std::to_string(t) + ".log")
            .find("following its new layout"),
        std::string::npos)
        << "trainer " << t;
  }
  // Every pass trained all its tasks; the last is as good as a job's.
  std::regex pass("pass (\\d+)/" + std::to_string(shape.passes) +
                  R"( \[#+\] (\d+)/(\d+) tasks)");
  int passes = 0;
  for (std::sregex_iterator it(out.begin(), out.end(), pass), end; it != end;
       ++it) {
    ++passes;
    EXPECT_EQ((*it)[2], (*it)[3]) << it->str();
  }
  EXPECT_EQ(passes, shape.passes) << out;
  EXPECT_GT(LastPassRow(out).second, 0.85) << out;
}

// A model file that does not fit the MLP: the trainer names the tensor and
// exits before talking to any daemon (the addresses lead nowhere).
TEST(ModelLifecycle, InitFromAMismatchedModelIsRefusedByName) {
  TempDir dir;
  std::vector<float> zeros(256 * 128);
  struct Case {
    std::vector<safetensors::TensorToWrite> tensors;
    std::string says;
  };
  auto t = [&](const char* name, std::vector<uint64_t> shape) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return safetensors::TensorToWrite{name, "F32", shape, zeros.data(), n * 4};
  };
  std::vector<safetensors::TensorToWrite> good = {
      t("fc1.w", {784, 256}), t("fc1.b", {256}),     t("fc2.w", {256, 128}),
      t("fc2.b", {128}),      t("fc3.w", {128, 10}), t("fc3.b", {10})};
  std::vector<float> big(784 * 256);
  good[0].data = big.data();
  std::vector<Case> cases;
  cases.push_back({good, ""});
  cases.back().tensors[2] = t("fc2.w", {128, 256});
  cases.back().says =
      "tensor 'fc2.w' has shape [128,256], the model's is [256,128]";
  cases.push_back({good, "tensor 'fc3.b' is missing"});
  cases.back().tensors.pop_back();
  cases.push_back({good, "tensor 'head.w' is not a parameter of the model"});
  cases.back().tensors.push_back(t("head.w", {2}));
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir.File("bad" + std::to_string(i));
    ASSERT_TRUE(safetensors::WriteFile(path, cases[i].tensors, {}).ok());
    std::string out;
    int code = RunToEnd(dir,
                        {testing::BuiltBinary("examples/fashion_mnist/"
                                              "fabps-fashion-mnist-trainer"),
                         "--init-from", path, "--master", "127.0.0.1:1",
                         "--pservers", "127.0.0.1:1", "--dataset",
                         "/nonexistent/*", "--test-data", "/nonexistent-test/*",
                         "--provider", "tcp;ofi_rxm", "--timeout-ms", "100"},
                        "trainer" + std::to_string(i), &out, 60000);
    EXPECT_EQ(code, 1) << out;
    EXPECT_NE(out.find("--init-from: " + path + ": " + cases[i].says),
              std::string::npos)
        << out;
  }
}

// The CTR job's hashed table goes through the same life: exported offline
// from its checkpoints as emb.ids and emb.values, it starts a new job
// (--init-from) whose buckets hold exactly those rows from the start (no id
// of the same data waits for admission again) and which trains from the
// model, not from scratch. A file that does not fit the table is refused
// by name before anything is initialized.
TEST(ModelLifecycle, CtrJobStartsFromItsExportedHashedTable) {
  TempDir dir;
  const std::vector<std::string> ctr = {"--model", "ctr", "--ctr-records",
                                        "20000"};
  std::string out;
  ASSERT_EQ(Launch(dir, "run1", ctr, &out), 0) << out;
  const std::pair<double, double> first = LastPassRow(out);
  std::smatch m;
  const std::regex held(R"(hashed table emb: (\d+) rows held .* (\d+) )"
                        R"(pushed rows not admitted)");
  ASSERT_TRUE(std::regex_search(out, m, held)) << out;
  const uint64_t rows = std::stoull(m[1]);
  ASSERT_GT(rows, 100u) << out;

  const std::string model = dir.File("ctr.safetensors");
  std::string exported;
  ASSERT_EQ(
      RunToEnd(dir,
               {testing::BuiltBinary("cmd/export/fabps-export"),
                "--checkpoints", dir.File("run1/checkpoints"), "-o", model},
               "export", &exported),
      0)
      << exported;
  auto file = safetensors::SafetensorsFile::Read(model);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const safetensors::TensorInfo* ids = file->Find("emb.ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids->shape, std::vector<uint64_t>{rows});

  // The MLP's learning rate too small to move it; the table keeps its own.
  std::vector<std::string> again = ctr;
  again.insert(again.end(), {"--init-from", model, "--lr", "0.000001"});
  ASSERT_EQ(Launch(dir, "run2", again, &out), 0) << out;
  EXPECT_NE(testing::ReadFileOrEmpty(dir.File("run2/trainer-0.log"))
                .find(std::to_string(rows) + " rows to start with), MLP " +
                      "128-32-1, from " + model),
            std::string::npos);
  ASSERT_TRUE(std::regex_search(out, m, held)) << out;
  EXPECT_EQ(std::stoull(m[1]), rows) << out;
  EXPECT_EQ(m[2], "0") << "every id of the data has its row already" << out;
  // Its pass's mean loss starts from the trained model's.
  EXPECT_LT(LastPassRow(out).first, first.first - 0.02) << out;

  // Refused by name: the table as a fixed one, a table whose ids repeat.
  std::vector<uint64_t> twice = {7, 7};
  std::vector<float> values(32);
  const std::string repeated = dir.File("repeated.safetensors");
  ASSERT_TRUE(safetensors::WriteFile(
                  repeated,
                  {{"emb.ids", "U64", {2}, twice.data(), 16},
                   {"emb.values", "F32", {2, 16}, values.data(), 128}},
                  {})
                  .ok());
  struct Case {
    std::string path;
    std::vector<std::string> flags;
    std::string says;
  };
  const Case cases[] = {{model,
                         {"--table", "fixed", "--table-rows", "1024"},
                         "tensor 'emb' is missing"},
                        {repeated, {}, "tensor 'emb.ids' holds id 7 twice"}};
  for (const Case& c : cases) {
    std::vector<std::string> argv = {
        testing::BuiltBinary("examples/ctr/fabps-ctr-trainer"),
        "--init-from",
        c.path,
        "--master",
        "127.0.0.1:1",
        "--pservers",
        "127.0.0.1:1",
        "--dataset",
        "/nonexistent/*",
        "--provider",
        "tcp;ofi_rxm",
        "--timeout-ms",
        "100"};
    argv.insert(argv.end(), c.flags.begin(), c.flags.end());
    std::string refused;
    EXPECT_EQ(RunToEnd(dir, argv, "ctr-trainer", &refused, 60000), 1)
        << refused;
    EXPECT_NE(refused.find("--init-from: " + c.path + ": " + c.says),
              std::string::npos)
        << refused;
  }
}

}  // namespace
}  // namespace fabps
