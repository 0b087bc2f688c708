// --model ctr: examples/ctr, a click-through-rate model (an embedding table
// moved by rows, and a small MLP) on impressions that cmd/ctr_gen generates
// from a planted model, once per --ctr-records; each pass's test AUC is
// compared with the planted model's. The table is a hashed table keyed by
// the 64-bit feature ids with admission and eviction on (--table hashed,
// the default in async mode), or a fixed table of --table-rows rows
// (--table fixed, the default with --mode sync: hashed tables run async).
// Its trainers are the C++ one (examples/ctr) or the PyTorch one
// (examples/ctr_torch, fabps.torch.EmbeddingBag through the fabps Python
// package, async only), which take the same flags and write the same
// metrics lines.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "cmd/launch/model_spec.h"
#include "protocol/rule_config.h"

namespace fabps::launch {
namespace {

constexpr const char* kCppTrainer = "examples/ctr/fabps-ctr-trainer";
constexpr const char* kTorchTrainer = "examples/ctr_torch/fabps-ctr-torch";

class CtrModel final : public ModelSpec {
 public:
  std::string name() const override { return "ctr"; }
  std::string summary() const override {
    return "examples/ctr: a hashed (or fixed) 16-float embedding table "
           "moved by rows, test AUC against the planted model's (--trainer "
           "torch: examples/ctr_torch)";
  }
  const ModelDefaults& defaults() const override {
    // The CTR trainer's own defaults; a checkpoint of a 256 MiB table takes
    // seconds: not every 10 s.
    static const ModelDefaults d = {/*job=*/"ctr",
                                    /*batch=*/256,
                                    /*rule=*/"adagrad",
                                    /*lr=*/0.02,
                                    /*lr_final=*/NAN,
                                    /*save_period=*/120,
                                    /*trainers=*/{"cpp", "torch"},
                                    /*rules=*/protocol::RuleNames(),
                                    /*sync=*/true,
                                    /*init_from_trainer=*/"cpp"};
    return d;
  }
  PassMetric metric() const override { return {"test_auc", "auc", "test AUC"}; }

  void AddFlags(CLI::App& app) override {
    const char* group = "Options of --model ctr";
    app.add_option("--table", table_,
                   "hashed (rows keyed by the 64-bit feature ids, created on "
                   "admission, dropped on eviction) or fixed (--table-rows "
                   "rows, row = id mod rows) (default: hashed; fixed with "
                   "--mode sync)")
        ->check(CLI::IsMember({"hashed", "fixed"}))
        ->group(group);
    app.add_option("--table-rows", table_rows_,
                   "with --table fixed: rows of the 16-float embedding table")
        ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 28))
        ->group(group);
    app.add_option("--buckets", buckets_,
                   "with --table hashed: buckets of the table (8: 4 per "
                   "pserver of two, a step's rows in one round trip)")
        ->check(CLI::Range(1, 65536))
        ->group(group);
    app.add_option("--admit-after", admit_after_,
                   "with --table hashed: an id gets a row at its K-th push")
        ->check(CLI::Range(1, 255))
        ->group(group);
    app.add_option("--ttl-seconds", ttl_seconds_,
                   "with --table hashed: rows not updated for this long are "
                   "evicted (0: never)")
        ->check(CLI::Range(int64_t{0}, int64_t{10} * 365 * 86400))
        ->group(group);
    app.add_option("--table-budget-mb", budget_mb_,
                   "with --table hashed: MiB of rows per pserver past which "
                   "the least recently updated are evicted (0: no budget)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 24))
        ->group(group);
    app.add_option("--ctr-records", records_,
                   "training impressions to generate (test: a tenth, at "
                   "least 20000)")
        ->check(CLI::Range(int64_t{1000}, int64_t{1} << 32))
        ->group(group);
  }

  Status ResolveFlags(const CLI::App& app, const LaunchFlags& f) override {
    if (table_.empty()) table_ = f.Sync() ? "fixed" : "hashed";
    if (f.trainer == "torch" && f.Sync()) {
      return Status::InvalidArgument(
          "--mode sync: with --trainer cpp only (the PyTorch CTR trainer "
          "runs async)");
    }
    if (table_ == "hashed" && f.Sync()) {
      return Status::InvalidArgument(
          "--table: hashed tables run in async mode only: with --mode sync "
          "use --table fixed");
    }
    auto given = [&app](const char* flag) {
      return app.get_option(flag)->count() > 0;
    };
    for (const char* flag :
         {"--buckets", "--admit-after", "--ttl-seconds", "--table-budget-mb"}) {
      if (table_ != "hashed" && given(flag))
        return Status::InvalidArgument(std::string(flag) +
                                       ": only with --table hashed");
    }
    if (table_ == "hashed" && given("--table-rows"))
      return Status::InvalidArgument("--table-rows: only with --table fixed");
    return Status::OK();
  }
  // One data directory per --ctr-records.
  std::string DataDirName() const override {
    return "ctr-" + std::to_string(records_);
  }

  // The generator writes planted.json last: once it is there the data is
  // complete.
  Status PrepareData(const ModelContext& ctx) override {
    const std::string& data = ctx.flags.data_dir;
    std::string planted = data + "/planted.json";
    if (!std::filesystem::exists(planted)) {
      std::printf("generating %lld CTR impressions into %s ...\n",
                  static_cast<long long>(records_), data.c_str());
      std::fflush(stdout);
      std::filesystem::create_directories(data);
      int64_t test = std::max<int64_t>(records_ / 10, 20000);
      Status s = ctx.run_helper(
          "ctr-gen",
          {ctx.flags.Bin("cmd/ctr_gen/fabps-ctr-gen"), "--output-dir", data,
           "--train-records", std::to_string(records_), "--test-records",
           std::to_string(test), "--vocab", std::to_string(Vocab()),
           "--train-shards", "8", "--test-shards", "2"});
      if (!s.ok()) {
        return Status::IOError("generating the CTR data failed:\n" +
                               s.message());
      }
    }
    FABPS_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(planted, 4096));
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.contains("planted_test_auc") ||
        !j["planted_test_auc"].is_number()) {
      return Status::InvalidArgument(planted + ": no planted_test_auc");
    }
    planted_auc_ = j["planted_test_auc"].get<double>();
    return Status::OK();
  }

  std::vector<std::pair<std::string, std::string>> TrainerEnvironment(
      const LaunchFlags& f) const override {
    if (f.trainer == "torch") return PythonTrainerEnvironment(f);
    return {};
  }

  std::vector<std::string> TrainerArgv(const ModelContext& ctx,
                                       int t) const override {
    const LaunchFlags& f = ctx.flags;
    std::vector<std::string> a = CommonTrainerArgv(
        ctx, f.trainer == "torch" ? kTorchTrainer : kCppTrainer, t);
    a.insert(a.end(), {"--table", table_});
    if (!f.init_from.empty()) a.insert(a.end(), {"--init-from", f.init_from});
    if (table_ == "hashed") {
      a.insert(a.end(), {"--buckets", std::to_string(buckets_), "--admit-after",
                         std::to_string(admit_after_), "--ttl-seconds",
                         std::to_string(ttl_seconds_), "--table-budget-mb",
                         std::to_string(budget_mb_)});
    } else {
      a.insert(a.end(), {"--table-rows", std::to_string(table_rows_)});
    }
    a.insert(a.end(), {"--batch", std::to_string(f.batch), "--rule", f.rule,
                       "--lr", std::to_string(f.lr)});
    if (f.Sync()) a.insert(a.end(), {"--mode", "sync"});
    return a;
  }

  std::string SummaryNote(double last) const override {
    if (std::isnan(planted_auc_)) return "";
    char buf[128];
    std::snprintf(buf, sizeof(buf),
                  "planted model's test AUC: %.4f (last pass: %.4f = %.3f of "
                  "it)",
                  planted_auc_, last, last / planted_auc_);
    return buf;
  }

 private:
  // Values per CTR field: about 100 training impressions per value on
  // average (Zipf: the head far more, the tail a few), enough to come within
  // 0.97 of the planted model's AUC (examples/ctr/README.md).
  int64_t Vocab() const { return std::max<int64_t>(records_ / 100, 100); }

  std::string table_;  // "": hashed, fixed with --mode sync
  uint64_t table_rows_ = uint64_t{1} << 22;
  // The hashed table: 8 buckets, 4 per pserver of the default two: a
  // step's rows read holds at most 4 of the 8 landing slots a trainer has
  // on each pserver, so 8 buckets take one round trip (16: two, about 15%
  // fewer samples/s). Admission after 2 pushes keeps ids pushed once out
  // of the table (test AUC 0.980 of the planted model's over 1M
  // impressions, 2 passes, as the fixed table's); rows not updated for 10
  // minutes are evicted: none in a job of a few minutes, where even a rare
  // id comes back within a pass. examples/ctr/README.md has the figures.
  int buckets_ = 8;
  int admit_after_ = 2;
  int64_t ttl_seconds_ = 600;
  int64_t budget_mb_ = 0;
  int64_t records_ = 1'000'000;
  double planted_auc_ = NAN;
};

const ModelRegistration kRegistration(std::make_unique<CtrModel>());

}  // namespace
}  // namespace fabps::launch
