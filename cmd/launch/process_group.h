// ProcessGroup: the launcher's children by name, each a base ChildProcess
// with its output in its own log file, in a process group of its own, dying
// with the launcher (PR_SET_PDEATHSIG) and ended by PID only. Not thread
// safe: the launcher's main loop owns it.
#ifndef FABPS_CMD_LAUNCH_PROCESS_GROUP_H_
#define FABPS_CMD_LAUNCH_PROCESS_GROUP_H_

#include <map>
#include <string>
#include <vector>

#include "base/child_process.h"
#include "base/status.h"

namespace fabps::launch {

struct Child {
  std::string name;  // "pserver-0", "trainer-1", "master"
  std::vector<std::string> argv;
  std::string log;
  // Whether the process runs, as of the last Reap (or Kill/Stop); then its
  // wait status.
  bool running = false;
  int wait_status = 0;
  bool killed_on_purpose = false;  // by --kill-random or at shutdown
  ChildProcess process;
};

class ProcessGroup {
 public:
  ~ProcessGroup() { StopAll(2000); }

  // Starts (or restarts, with the same argv and log) the child `name`.
  Status Start(const std::string& name, const std::vector<std::string>& argv,
               const std::string& log);
  Status Restart(const std::string& name);
  // Reaps children that exited; returns the names of those that did.
  std::vector<std::string> Reap();
  Child* Find(const std::string& name);
  // The names of every child started so far, in name order.
  std::vector<std::string> Names() const;
  void Kill(const std::string& name);  // SIGKILL, marked on purpose
  // SIGTERM to every running child but `except` (none when empty), SIGKILL
  // after grace_ms; reaps them.
  void StopAll(int grace_ms, const std::string& except = "");
  void Stop(const std::string& name, int grace_ms);

 private:
  std::map<std::string, Child> children_;
};

// The last `lines` lines of a file (for failure reports).
std::string TailOfFile(const std::string& path, int lines);

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_PROCESS_GROUP_H_
