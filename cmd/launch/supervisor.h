// Supervisor: restarts the processes of a ProcessGroup that end on their
// own, whatever the cause (kill -9 from outside, a crash, exit 3 after a
// lost lease, a standby master's death), with back-off and a restart budget
// per role. One home for this policy: fabps-launch supervises its whole job
// with it and fabps-supervise (cmd/launch/supervise_main.cc) one process
// of a cluster node.
//
//   Supervisor sup(&group, options);
//   for (const auto& name : group.Reap()) {
//     if (group.Find(name)->killed_on_purpose || <name is done>) continue;
//     FABPS_RETURN_IF_ERROR(sup.OnEnded(name));  // out of budget: the reason
//   }
//   FABPS_RETURN_IF_ERROR(sup.StartDue());        // restarts whose time came
//
// Roles: a child's role is its name without a trailing "-<digits>" and
// without "-standby" ("pserver-1" -> "pserver", "master-standby" ->
// "master"); the budget counts restarts of all processes of one role.
// Back-off: the n-th restart of a role waits backoff_initial_s * 2^(n-1),
// at most backoff_max_s. An exit code of 2 (the daemons' "bad flags or the
// job disagrees with them") or 127 (the program could not be executed) is
// never restarted: a restart cannot fix it.
//
// Not thread safe: the owner of the ProcessGroup calls it.
#ifndef FABPS_CMD_LAUNCH_SUPERVISOR_H_
#define FABPS_CMD_LAUNCH_SUPERVISOR_H_

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "cmd/launch/process_group.h"

namespace fabps::launch {

struct SupervisorOptions {
  int restarts_per_role = 10;
  double backoff_initial_s = 0.5;
  double backoff_max_s = 8;
  // The flag that sets restarts_per_role, named when the budget is out.
  std::string budget_flag = "--restarts-per-role";
  // Runs just before a child is started again (e.g. removes its port file
  // so that a waiter sees the new one).
  std::function<void(const std::string& name)> before_restart;
  // Told of every decision in one line ("pserver-1 ended (signal 9): restart
  // 1 of 10 for role pserver in 0.5 s").
  std::function<void(const std::string& line)> note;
};

// "exit code 3" or "signal 9 (Killed)": how a wait status ended.
std::string DescribeEnd(int wait_status);

// The role of a child name (see the file comment).
std::string RoleOf(const std::string& name);

class Supervisor {
 public:
  using Clock = std::chrono::steady_clock;
  // `group` must outlive the Supervisor.
  Supervisor(ProcessGroup* group, SupervisorOptions options);

  // `name` (a child of the group, reaped, not ended on purpose) ended on
  // its own: schedules its restart. FailedPrecondition naming the process,
  // how it ended and the tail of its log when its role is out of budget or
  // it exited 2.
  Status OnEnded(const std::string& name);
  // `name` runs but does not serve (frozen: `why` says how it was seen):
  // kills it (SIGKILL, marked on purpose) and schedules its restart like
  // OnEnded, within the same budget.
  Status Replace(const std::string& name, const std::string& why);
  // Starts the scheduled restarts that are due; the error of a failed start
  // (naming the process).
  Status StartDue();
  // Whether `name` waits for its restart.
  bool Pending(const std::string& name) const {
    return pending_.count(name) > 0;
  }
  // Forgets a scheduled restart (the caller restarted or stopped `name`).
  void Cancel(const std::string& name) { pending_.erase(name); }
  // Restarts done (or scheduled) so far for `role`.
  int Used(const std::string& role) const;
  // Every restart so far, one line each, in order.
  const std::vector<std::string>& log() const { return log_; }

 private:
  // Counts a restart of `name` against its role's budget and schedules it.
  Status Schedule(Child& c, const std::string& how);

  ProcessGroup* const group_;
  const SupervisorOptions o_;
  std::map<std::string, int> used_;                   // by role
  std::map<std::string, Clock::time_point> pending_;  // by name
  std::vector<std::string> log_;
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_SUPERVISOR_H_
