// fabps-fashion-mnist-trainer: see trainer.h and README.md.
#include <cstdio>

#include "base/log.h"
#include "examples/fashion_mnist/mlp_model_file.h"
#include "examples/fashion_mnist/trainer.h"
#include "examples/fashion_mnist/trainer_flags.h"

int main(int argc, char** argv) {
  using namespace fabps::examples::fashion_mnist;
  TrainerConfig config;
  int rc = ParseTrainerFlags(argc, argv, &config);
  if (rc >= 0) return rc;
  fabps::SetLogRole("trainer", static_cast<int>(config.trainer_id));
  fabps::Status s =
      config.evaluate.empty() ? RunTrainer(config) : EvaluateModelFile(config);
  if (!s.ok()) {
    std::fprintf(stderr, "fabps-fashion-mnist-trainer: %s\n",
                 s.ToString().c_str());
    return 1;
  }
  return 0;
}
