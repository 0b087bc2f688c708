// Test helper: N real fabps-pserver processes on loopback, each with its own
// checkpoint directory under a TempDir, ports read from --port-file.
#ifndef FABPS_TESTS_TRAINER_PSERVER_CLUSTER_H_
#define FABPS_TESTS_TRAINER_PSERVER_CLUSTER_H_

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/util/subprocess.h"

namespace fabps::testing {

class PServerCluster {
 public:
  PServerCluster(std::string provider, int n,
                 std::vector<std::string> extra = {})
      : provider_(std::move(provider)),
        extra_(std::move(extra)),
        procs_(n),
        ports_(n, 0) {}

  // Starts pserver i (again, after Kill/Stop: same checkpoint dir).
  Status Start(int i) {
    std::string port_file = dir_.File("port-" + std::to_string(i));
    ::unlink(port_file.c_str());
    std::vector<std::string> argv = {
        BuiltBinary("pserver/daemon/fabps-pserver"),
        "--provider",
        provider_,
        "--index",
        std::to_string(i),
        "--num-pservers",
        std::to_string(procs_.size()),
        "--port",
        std::to_string(ports_[i]),
        "--port-file",
        port_file,
        "--checkpoint-dir",
        dir_.File("ckpt-" + std::to_string(i)),
        "--save-period",
        "0",
        "--apply-threads",
        "2"};
    argv.insert(argv.end(), extra_.begin(), extra_.end());
    FABPS_ASSIGN_OR_RETURN(procs_[i], Subprocess::Start(argv, log(i)));
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      std::string p = ReadFileOrEmpty(port_file);
      if (!p.empty() && p.back() == '\n') {
        ports_[i] = std::stoi(p);
        return Status::OK();
      }
      if (!procs_[i].running() || std::chrono::steady_clock::now() > end) {
        return Status::Unavailable(
            "pserver " + std::to_string(i) +
            " did not start: " + ReadFileOrEmpty(log(i)));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  Status StartAll() {
    for (size_t i = 0; i < procs_.size(); i++)
      FABPS_RETURN_IF_ERROR(Start(static_cast<int>(i)));
    return Status::OK();
  }
  std::vector<std::string> addresses() const {
    std::vector<std::string> out;
    for (int p : ports_) out.push_back("127.0.0.1:" + std::to_string(p));
    return out;
  }
  Subprocess& proc(int i) { return procs_[i]; }
  std::string log(int i) const {
    return dir_.File("pserver-" + std::to_string(i) + ".log");
  }
  const TempDir& dir() const { return dir_; }

 private:
  std::string provider_;
  std::vector<std::string> extra_;
  TempDir dir_;
  std::vector<Subprocess> procs_;
  std::vector<int> ports_;
};

}  // namespace fabps::testing

#endif  // FABPS_TESTS_TRAINER_PSERVER_CLUSTER_H_
