// --model ctr: examples/ctr, a click-through-rate model (a hashed-feature
// embedding table of --table-rows rows moved by rows, and a small MLP) on
// impressions that cmd/ctr_gen generates from a planted model, once per
// --ctr-records; each pass's test AUC is compared with the planted model's.
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

class CtrModel final : public ModelSpec {
 public:
  std::string name() const override { return "ctr"; }
  std::string summary() const override {
    return "examples/ctr: hashed features, a 16-float embedding table moved "
           "by rows, test AUC against the planted model's";
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
                                    /*trainers=*/{"cpp"},
                                    /*rules=*/protocol::RuleNames(),
                                    /*sync=*/true,
                                    /*init_from_trainer=*/""};
    return d;
  }
  PassMetric metric() const override { return {"test_auc", "auc", "test AUC"}; }

  void AddFlags(CLI::App& app) override {
    app.add_option("--table-rows", table_rows_,
                   "rows of the 16-float embedding table")
        ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 28))
        ->group("Options of --model ctr");
    app.add_option("--ctr-records", records_,
                   "training impressions to generate (test: a tenth, at "
                   "least 20000)")
        ->check(CLI::Range(int64_t{1000}, int64_t{1} << 32))
        ->group("Options of --model ctr");
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

  std::vector<std::string> TrainerArgv(const ModelContext& ctx,
                                       int t) const override {
    const LaunchFlags& f = ctx.flags;
    std::vector<std::string> a =
        CommonTrainerArgv(ctx, "examples/ctr/fabps-ctr-trainer", t);
    a.insert(a.end(), {"--table-rows", std::to_string(table_rows_), "--batch",
                       std::to_string(f.batch), "--rule", f.rule, "--lr",
                       std::to_string(f.lr)});
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

  uint64_t table_rows_ = uint64_t{1} << 22;
  int64_t records_ = 1'000'000;
  double planted_auc_ = NAN;
};

const ModelRegistration kRegistration(std::make_unique<CtrModel>());

}  // namespace
}  // namespace fabps::launch
