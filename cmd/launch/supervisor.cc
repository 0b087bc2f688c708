#include "cmd/launch/supervisor.h"

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

namespace fabps::launch {

std::string DescribeEnd(int wait_status) {
  if (WIFEXITED(wait_status))
    return "exit code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    const char* what = ::strsignal(sig);
    return "signal " + std::to_string(sig) +
           (what != nullptr ? std::string(" (") + what + ")" : "");
  }
  return "wait status " + std::to_string(wait_status);
}

std::string RoleOf(const std::string& name) {
  std::string role = name;
  const std::string standby = "-standby";
  if (role.size() > standby.size() &&
      role.compare(role.size() - standby.size(), standby.size(), standby) ==
          0) {
    role.resize(role.size() - standby.size());
  }
  size_t dash = role.rfind('-');
  if (dash != std::string::npos && dash + 1 < role.size() &&
      std::all_of(role.begin() + dash + 1, role.end(),
                  [](unsigned char c) { return std::isdigit(c); })) {
    role.resize(dash);
  }
  return role;
}

Supervisor::Supervisor(ProcessGroup* group, SupervisorOptions options)
    : group_(group), o_(std::move(options)) {}

int Supervisor::Used(const std::string& role) const {
  auto it = used_.find(role);
  return it == used_.end() ? 0 : it->second;
}

Status Supervisor::OnEnded(const std::string& name) {
  Child* c = group_->Find(name);
  if (c == nullptr) return Status::NotFound("no process named " + name);
  const std::string how = DescribeEnd(c->wait_status);
  // 2: bad flags or settings; 127: the program could not be executed
  // (ChildProcess's exec failure). Neither gets better by restarting.
  const int code = WIFEXITED(c->wait_status) ? WEXITSTATUS(c->wait_status) : -1;
  if (code == 2 || code == 127) {
    return Status::FailedPrecondition(
        name + " failed (" + how +
        (code == 2 ? ": its flags or the job's settings are wrong"
                   : ": the program could not be executed") +
        "; not restarted)" +
        (c->log.empty()
             ? ""
             : "; last lines of " + c->log + ":\n" + TailOfFile(c->log, 25)));
  }
  return Schedule(*c, how);
}

Status Supervisor::Replace(const std::string& name, const std::string& why) {
  Child* c = group_->Find(name);
  if (c == nullptr) return Status::NotFound("no process named " + name);
  group_->Kill(name);
  return Schedule(*c, why + "; killed -9");
}

Status Supervisor::Schedule(Child& c, const std::string& how) {
  const std::string& name = c.name;
  const std::string role = RoleOf(name);
  const std::string tail = c.log.empty() ? ""
                                         : "; last lines of " + c.log + ":\n" +
                                               TailOfFile(c.log, 25);
  int& used = used_[role];
  if (used >= o_.restarts_per_role) {
    return Status::FailedPrecondition(
        name + " failed (" + how + ") and role " + role + " used all " +
        std::to_string(o_.restarts_per_role) + " restarts (" + o_.budget_flag +
        ")" + tail);
  }
  used++;
  double delay = std::min(o_.backoff_max_s,
                          o_.backoff_initial_s * std::pow(2.0, used - 1));
  pending_[name] = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(delay));
  char line[512];
  std::snprintf(line, sizeof(line),
                "%s ended (%s): restart %d of %d for role %s in %.1f s",
                name.c_str(), how.c_str(), used, o_.restarts_per_role,
                role.c_str(), delay);
  log_.push_back(line);
  if (o_.note) o_.note(line);
  return Status::OK();
}

Status Supervisor::StartDue() {
  const auto now = Clock::now();
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    const std::string name = it->first;
    it = pending_.erase(it);
    if (o_.before_restart) o_.before_restart(name);
    Status s = group_->Restart(name);
    if (!s.ok())
      return Status::Unavailable("restarting " + name + ": " + s.ToString());
  }
  return Status::OK();
}

}  // namespace fabps::launch
