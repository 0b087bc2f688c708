// fabps-fashion-mnist-trainer: see trainer.h and README.md.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "base/log.h"
#include "examples/fashion_mnist/mlp_model_file.h"
#include "examples/fashion_mnist/trainer.h"
#include "examples/fashion_mnist/trainer_flags.h"

namespace {

// The model's products are small and a job runs about one trainer per
// core: one BLAS thread each (OpenBLAS starts one per core otherwise),
// unless OPENBLAS_NUM_THREADS says. Looked up at run time: the system BLAS
// may be another library (reference BLAS has no threads).
void OneBlasThreadUnlessTold() {
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return;
  using SetThreads = void (*)(int);
  auto set = reinterpret_cast<SetThreads>(
      ::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set != nullptr) set(1);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fabps::examples::fashion_mnist;
  OneBlasThreadUnlessTold();
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
