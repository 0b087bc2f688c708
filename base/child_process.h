// ChildProcess: one child started by fork/exec and owned by the handle, the
// one place fabps starts and reaps processes (the test fixtures, the
// launcher and the benchmarks build their own bookkeeping on it).
//
//   SpawnOptions o;
//   o.argv = {"/path/to/fabps-pserver", "--port", "0"};
//   o.log_path = dir + "/pserver.log";
//   FABPS_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(o));
//   ...
//   Result<int> st = child.Stop(/*grace_ms=*/3000);  // TERM, then KILL
//
// Ending: only the child's own PID is ever signalled. The destructor (and
// move-assignment over a running child) sends SIGKILL and reaps, so no child
// outlives its handle as a zombie. A child whose end was caused by a signal
// may leave shared-memory regions of the shm provider behind; they are
// removed when it is reaped (base/shm_regions.h).
//
// Death of the parent: with die_with_parent the child gets SIGKILL when the
// parent dies (PR_SET_PDEATHSIG). Linux sends it when the *thread* that
// forked ends, so it is only set when the main thread spawns; children
// spawned from other threads do not die with the parent.
//
// Waits: Wait and Stop poll waitpid(WNOHANG) every few milliseconds until
// the child is reaped or the timeout passes; every wait has a timeout.
//
// Errors: Spawn fails with the errno of open/fork (PosixError) or
// InvalidArgument for an empty argv; a failed exec shows as exit code 127,
// with "exec <path>: <reason>" in the log.
//
// Thread safety: none; one thread owns a handle (it may be moved between
// threads).
#ifndef FABPS_BASE_CHILD_PROCESS_H_
#define FABPS_BASE_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/status.h"

namespace fabps {

struct SpawnOptions {
  // argv[0] is the path of the program (no PATH search).
  std::vector<std::string> argv;
  // "NAME=value" entries added to (or replacing in) the inherited
  // environment.
  std::vector<std::string> env;
  // stdout and stderr go to this file (created 0644) when it is not empty,
  // else they are inherited.
  std::string log_path;
  bool truncate_log = false;  // truncate instead of append
  // stdin from /dev/null instead of the parent's.
  bool stdin_from_dev_null = false;
  // A process group of its own (setpgid(0, 0)): Ctrl-C at the terminal
  // reaches the parent only, which can then stop its children in order.
  bool own_process_group = false;
  // SIGKILL when the parent dies (see the header comment for the caveat).
  bool die_with_parent = true;
};

class ChildProcess {
 public:
  static Result<ChildProcess> Spawn(const SpawnOptions& options);

  ChildProcess() = default;  // no child
  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills (SIGKILL) and reaps the child if it is still running.
  ~ChildProcess();

  // -1 when there is no child.
  pid_t pid() const { return pid_; }
  // Whether the child runs; reaps it (without blocking) if it has exited.
  bool running();
  // Whether the child was reaped, and its status as from waitpid (use
  // WIFEXITED etc.); 0 before.
  bool exited() const { return exited_; }
  int wait_status() const { return wait_status_; }
  const std::string& log_path() const { return log_path_; }

  // kill(pid, sig); FailedPrecondition when the child is not running.
  Status Signal(int sig);
  // Waits until the child exits, up to `timeout_ms`, and returns its wait
  // status; TimedOut when it still runs; FailedPrecondition without a child.
  Result<int> Wait(int timeout_ms);
  // SIGTERM, up to `grace_ms` for the child to exit, then SIGKILL; returns
  // the wait status.
  Result<int> Stop(int grace_ms);
  // SIGKILL and reap (blocking: SIGKILL cannot be ignored).
  void Kill();

 private:
  void Reaped(int status);

  pid_t pid_ = -1;
  bool exited_ = false;
  int wait_status_ = 0;
  std::string log_path_;
};

}  // namespace fabps

#endif  // FABPS_BASE_CHILD_PROCESS_H_
