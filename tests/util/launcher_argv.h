// The command line of a test's fabps-launch job: one home for the flags that
// every launcher test shares, so that a flag's rename touches one place.
#ifndef FABPS_TESTS_UTIL_LAUNCHER_ARGV_H_
#define FABPS_TESTS_UTIL_LAUNCHER_ARGV_H_

#include <string>
#include <vector>

#include "tests/util/subprocess.h"

namespace fabps::testing {

// The shape of a small local job on tcp;ofi_rxm.
struct LauncherJob {
  int passes = 1;
  int pservers = 2;
  int trainers = 2;
  std::string run = "run";  // under the test's directory
  int save_period = 0;      // 0: the launcher's default
};

// fabps-launch with `job`'s flags, its run directory dir/<job.run> and its
// data directory dir/data, then `extra` as given (other flags).
std::vector<std::string> LauncherArgv(const TempDir& dir,
                                      const LauncherJob& job,
                                      const std::vector<std::string>& extra);

}  // namespace fabps::testing

#endif  // FABPS_TESTS_UTIL_LAUNCHER_ARGV_H_
