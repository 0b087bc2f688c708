// fabps-ctr-trainer: see trainer.h and README.md.
#include <cstdio>

#include "base/log.h"
#include "examples/ctr/trainer.h"
#include "examples/ctr/trainer_flags.h"

int main(int argc, char** argv) {
  using namespace fabps::examples::ctr;
  CtrTrainerConfig config;
  int rc = ParseCtrTrainerFlags(argc, argv, &config);
  if (rc >= 0) return rc;
  fabps::SetLogRole("trainer", static_cast<int>(config.trainer_id));
  fabps::Status s = RunCtrTrainer(config);
  if (!s.ok()) {
    std::fprintf(stderr, "fabps-ctr-trainer: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
