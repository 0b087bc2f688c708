#include "cmd/launch/job_watchdog.h"

#include <sys/wait.h>

#include <cstdio>

#include "base/file_util.h"

namespace fabps::launch {

bool JobWatchdog::AllFinished() const {
  for (bool b : finished_)
    if (!b) return false;
  return true;
}

Status JobWatchdog::Check(const std::vector<std::string>& ended,
                          const trainer::MasterStatusSummary& master) {
  for (const auto& name : ended) {
    Child* c = group_.Find(name);
    bool clean = WIFEXITED(c->wait_status) && WEXITSTATUS(c->wait_status) == 0;
    if (name.rfind("trainer-", 0) == 0 && clean) {
      finished_[std::stoi(name.substr(8))] = true;
      continue;
    }
    if (c->killed_on_purpose) continue;
    FABPS_RETURN_IF_ERROR(sup_.OnEnded(name));
  }
  // A pserver that runs, has served (its port file is there) and answers
  // no status call for --unresponsive-timeout is frozen: the trainers wait
  // on it, and its claim may be gone already. Its restart takes over.
  for (int i = 0; i < f_.pservers && answers_.Has(i); i++) {
    std::string name = "pserver-" + std::to_string(i);
    Child* c = group_.Find(name);
    auto port = ReadWholeFile(run_.PortFile(name), 64);
    if (c == nullptr || !c->running || !port.ok() || port->empty()) {
      answers_.Reset(i);
      continue;
    }
    double still = answers_.SilentFor(i);
    if (still >= f_.unresponsive_s) {
      char why[128];
      std::snprintf(why, sizeof(why),
                    "answered no status call for %.0f s "
                    "(--unresponsive-timeout): frozen",
                    still);
      FABPS_RETURN_IF_ERROR(sup_.Replace(name, why));
      answers_.Reset(i);
    }
  }
  FABPS_RETURN_IF_ERROR(sup_.StartDue());
  double still = progress_.StillFor();
  if (still >= f_.stall_timeout_s) {
    char what[160];
    std::snprintf(what, sizeof(what),
                  "no progress (no task done, no update applied) for %.0f s "
                  "(--stall-timeout)",
                  still);
    return Status::TimedOut(std::string(what) + "\n" + Diagnosis(master));
  }
  return Status::OK();
}

std::string JobWatchdog::Diagnosis(
    const trainer::MasterStatusSummary& master) const {
  std::string out = "master: pass " + std::to_string(master.pass + 1) + ", " +
                    std::to_string(master.done) + " of " +
                    std::to_string(master.num_tasks) + " tasks done\n";
  for (const std::string& name : group_.Names()) {
    Child* c = group_.Find(name);
    std::string state =
        c->running ? "running, pid " + std::to_string(c->process.pid())
        : sup_.Pending(name) ? "waiting for its restart"
                             : "ended (" + DescribeEnd(c->wait_status) + ")";
    if (name.rfind("pserver-", 0) == 0 && c->running) {
      int i = std::stoi(name.substr(8));
      if (answers_.Has(i)) {
        char buf[96];
        std::snprintf(buf, sizeof(buf),
                      "; last answered a status call %.0f s ago",
                      answers_.SilentFor(i));
        state += buf;
      }
    }
    std::string last = TailOfFile(c->log, 1);
    out += "  " + name + ": " + state + "; restarts of role " + RoleOf(name) +
           ": " + std::to_string(sup_.Used(RoleOf(name))) + "; its log (" +
           c->log + ") ends with:\n  " + last;
  }
  return out;
}

}  // namespace fabps::launch
