// --model fashion-mnist: the MLP of examples/fashion_mnist on the Debian
// package's Fashion-MNIST, converted once into --data-dir; its trainers are
// the C++ one (Eigen, saves the job's model) or the PyTorch one
// (examples/fashion_mnist_torch, through the fabps Python package), which
// take the same flags and write the same metrics lines.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "base/file_util.h"
#include "cmd/launch/model_spec.h"
#include "protocol/rule_config.h"

namespace fabps::launch {
namespace {

constexpr const char* kCppTrainer =
    "examples/fashion_mnist/fabps-fashion-mnist-trainer";
constexpr const char* kTorchTrainer =
    "examples/fashion_mnist_torch/fabps-fashion-mnist-torch";
// Fashion-MNIST's training split: the learning rate decays over one update
// per mini-batch of it per pass, whichever trainer sends it.
constexpr int64_t kTrainExamples = 60000;

class FashionMnistModel final : public ModelSpec {
 public:
  std::string name() const override { return "fashion-mnist"; }
  std::string summary() const override {
    return "an MLP on Fashion-MNIST (examples/fashion_mnist; --trainer "
           "torch: examples/fashion_mnist_torch)";
  }
  const ModelDefaults& defaults() const override {
    // Adam with a linear decay to lr_final over the run: 0.887 test
    // accuracy after 5 passes (constant rates level off near 0.86).
    static const ModelDefaults d = {/*job=*/"fashion-mnist",
                                    /*batch=*/64,
                                    /*rule=*/"adam",
                                    /*lr=*/0.001,
                                    /*lr_final=*/0.00005,
                                    /*save_period=*/10,
                                    /*trainers=*/{"cpp", "torch"},
                                    /*rules=*/protocol::RuleNames(),
                                    /*sync=*/false,
                                    /*init_from_trainer=*/"cpp"};
    return d;
  }
  PassMetric metric() const override {
    return {"test_accuracy", "acc", "test accuracy"};
  }
  std::string DataDirName() const override { return "fashion-mnist"; }

  Status PrepareData(const ModelContext& ctx) override {
    const std::string& data = ctx.flags.data_dir;
    std::string marker = data + "/.converted";
    if (std::filesystem::exists(marker)) return Status::OK();
    std::printf("converting Fashion-MNIST into %s ...\n", data.c_str());
    std::fflush(stdout);
    for (const std::string split : {"train", "test"}) {
      std::string out = data + "/" + split;
      std::filesystem::create_directories(out);
      Status s = ctx.run_helper(
          "convert-" + split,
          {ctx.flags.Bin("cmd/convert/fabps-convert-fashion-mnist"), "--split",
           split, "--output-dir", out, "--shards",
           split == "train" ? "8" : "2"});
      if (!s.ok()) {
        return Status::IOError("converting the " + split + " split failed:\n" +
                               s.message());
      }
    }
    return WriteFileAtomically(marker, "ok\n");
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
    auto add = [&a](const char* flag, const std::string& value) {
      a.push_back(flag);
      a.push_back(value);
    };
    if (f.trainer == "cpp") {
      // The save election's winner writes the model at the end of the job.
      add("--save-model", ctx.run.ModelFile());
      if (!f.init_from.empty()) add("--init-from", f.init_from);
    }
    add("--batch", std::to_string(f.batch));
    add("--rule", f.rule);
    add("--lr", std::to_string(f.lr));
    add("--lr-final", std::to_string(f.lr_final));
    const int64_t batches = (kTrainExamples + f.batch - 1) / f.batch;
    add("--lr-decay-steps", std::to_string(int64_t{f.passes} * batches));
    return a;
  }
};

const ModelRegistration kRegistration(std::make_unique<FashionMnistModel>());

}  // namespace
}  // namespace fabps::launch
