// PServerProcesses: the fabps-pserver processes one benchmark configuration
// runs against, on loopback.
//
//   PServerProcessOptions o;
//   o.binary = "/path/to/fabps-pserver";
//   o.provider = "tcp;ofi_rxm";
//   auto ps = PServerProcesses::Start(o, 2);    // pservers 0 and 1
//   ... (*ps)->addresses() ...                   // {"127.0.0.1:PORT0", ...}
//   ps->reset();                                 // SIGKILL by PID, reap, rm
//   dir
//
// Each pserver gets --port 0 and a --port-file in a fresh directory under
// $TMPDIR (or /tmp), its log (pserver-I.log) and checkpoint directory there,
// and --save-period 0, so nothing is written to disk while a benchmark runs.
// Start returns once every pserver wrote its port, or an error with the tail
// of the log of the one that did not.
//
// Ending: the destructor sends SIGKILL to exactly the PIDs it started, reaps
// them (base's ChildProcess) and removes the directory (kept when
// FABPS_KEEP_BENCH_DIRS is set). Children also get SIGKILL when the
// benchmark process dies (PR_SET_PDEATHSIG, when the main thread started
// them), so a crashed benchmark leaves no pserver behind.
//
// Thread safety: none; one thread owns an instance.
#ifndef FABPS_BENCH_TRAINER_PSERVER_PROCESSES_H_
#define FABPS_BENCH_TRAINER_PSERVER_PROCESSES_H_

#include <memory>
#include <string>
#include <vector>

#include "base/child_process.h"
#include "base/status.h"

namespace fabps::bench {

struct PServerProcessOptions {
  std::string binary;  // path of fabps-pserver
  std::string provider = "tcp;ofi_rxm";
  int apply_threads = 0;        // the pserver's --apply-threads (0: all cores)
  uint64_t block_elements = 0;  // --block-elements (0: whatever trainers use)
  int start_timeout_ms = 30000;
};

class PServerProcesses {
 public:
  static Result<std::unique_ptr<PServerProcesses>> Start(
      const PServerProcessOptions& options, int count);
  ~PServerProcesses();
  PServerProcesses(const PServerProcesses&) = delete;
  PServerProcesses& operator=(const PServerProcesses&) = delete;

  // "127.0.0.1:PORT" of pserver 0, 1, ...
  std::vector<std::string> addresses() const;
  // Pserver i's log file.
  std::string log_path(int i) const;

 private:
  PServerProcesses() = default;
  Status Spawn(const PServerProcessOptions& options, int index, int count);

  std::string dir_;
  std::vector<ChildProcess> children_;
  std::vector<int> ports_;
};

}  // namespace fabps::bench

#endif  // FABPS_BENCH_TRAINER_PSERVER_PROCESSES_H_
