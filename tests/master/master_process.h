// Starts a real fabps-master for process tests: port 0, the chosen port read
// from --port-file, state in a local store under the given directory.
#ifndef FABPS_TESTS_MASTER_MASTER_PROCESS_H_
#define FABPS_TESTS_MASTER_MASTER_PROCESS_H_

#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "tests/util/subprocess.h"

namespace fabps::testing {

struct MasterProcess {
  Subprocess proc;
  int port = 0;
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }

  // Starts fabps-master with --state-dir `state_dir`, logging to `log`
  // (appended). Waits up to 20 s for the port file.
  static Result<MasterProcess> Start(
      const std::string& state_dir, const std::string& log,
      const std::vector<std::string>& extra = {}) {
    std::string port_file = state_dir + ".port";
    ::unlink(port_file.c_str());
    std::vector<std::string> argv = {BuiltBinary("master/fabps-master"),
                                     "--state-dir",
                                     state_dir,
                                     "--port",
                                     "0",
                                     "--port-file",
                                     port_file,
                                     "--job",
                                     "test"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    FABPS_ASSIGN_OR_RETURN(Subprocess p, Subprocess::Start(argv, log));
    MasterProcess m;
    m.proc = std::move(p);
    Deadline deadline = Deadline::InMs(20'000);
    while (!deadline.Expired()) {
      std::string content = ReadFileOrEmpty(port_file);
      if (!content.empty() && content.back() == '\n') {
        m.port = std::stoi(content);
        return m;
      }
      if (!m.proc.running())
        return Status::Unavailable("fabps-master exited: " +
                                   ReadFileOrEmpty(log));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Status::TimedOut("fabps-master did not write its port file");
  }
};

}  // namespace fabps::testing

#endif  // FABPS_TESTS_MASTER_MASTER_PROCESS_H_
