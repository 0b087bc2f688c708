#include "tests/util/launcher_argv.h"

namespace fabps::testing {

std::vector<std::string> LauncherArgv(const TempDir& dir,
                                      const LauncherJob& job,
                                      const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {BuiltBinary("cmd/launch/fabps-launch"),
                                   "--passes",
                                   std::to_string(job.passes),
                                   "--pservers",
                                   std::to_string(job.pservers),
                                   "--trainers",
                                   std::to_string(job.trainers),
                                   "--provider",
                                   "tcp;ofi_rxm",
                                   "--run-dir",
                                   dir.File(job.run),
                                   "--data-dir",
                                   dir.File("data")};
  if (job.save_period > 0) {
    argv.push_back("--save-period");
    argv.push_back(std::to_string(job.save_period));
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

}  // namespace fabps::testing
