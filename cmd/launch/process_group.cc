#include "cmd/launch/process_group.h"

#include <signal.h>

#include <deque>
#include <fstream>
#include <utility>

#include "base/deadline.h"

namespace fabps::launch {

Status ProcessGroup::Start(const std::string& name,
                           const std::vector<std::string>& argv,
                           const std::string& log) {
  if (argv.empty()) return Status::InvalidArgument("empty command for " + name);
  SpawnOptions o;
  o.argv = argv;
  o.log_path = log;
  o.stdin_from_dev_null = true;
  // Ctrl-C reaches the launcher only; it stops the children in order.
  o.own_process_group = true;
  FABPS_ASSIGN_OR_RETURN(ChildProcess process, ChildProcess::Spawn(o));
  Child& c = children_[name];
  c.name = name;
  c.argv = argv;
  c.log = log;
  c.running = true;
  c.wait_status = 0;
  c.killed_on_purpose = false;
  c.process = std::move(process);  // a previous process was reaped by Reap
  return Status::OK();
}

Status ProcessGroup::Restart(const std::string& name) {
  Child* c = Find(name);
  if (c == nullptr) return Status::NotFound(name);
  std::vector<std::string> argv = c->argv;
  std::string log = c->log;
  return Start(name, argv, log);
}

namespace {
// Copies the process's end into the launcher's view of it.
void Ended(Child& c) {
  c.running = false;
  c.wait_status = c.process.wait_status();
}
}  // namespace

std::vector<std::string> ProcessGroup::Reap() {
  std::vector<std::string> out;
  for (auto& [name, c] : children_) {
    if (c.running && !c.process.running()) {
      Ended(c);
      out.push_back(name);
    }
  }
  return out;
}

Child* ProcessGroup::Find(const std::string& name) {
  auto it = children_.find(name);
  return it == children_.end() ? nullptr : &it->second;
}

std::vector<std::string> ProcessGroup::Names() const {
  std::vector<std::string> out;
  for (const auto& [name, c] : children_) out.push_back(name);
  return out;
}

void ProcessGroup::Kill(const std::string& name) {
  Child* c = Find(name);
  if (c == nullptr || !c->running) return;
  c->killed_on_purpose = true;
  c->process.Kill();
  Ended(*c);
}

void ProcessGroup::Stop(const std::string& name, int grace_ms) {
  Child* c = Find(name);
  if (c == nullptr || !c->running) return;
  c->killed_on_purpose = true;
  (void)c->process.Stop(grace_ms);
  Ended(*c);
}

void ProcessGroup::StopAll(int grace_ms, const std::string& except) {
  // SIGTERM to all first, so that they wind down side by side within one
  // grace period.
  for (auto& [name, c] : children_) {
    if (c.running && name != except) {
      c.killed_on_purpose = true;
      (void)c.process.Signal(SIGTERM);
    }
  }
  const Deadline deadline = Deadline::InMs(grace_ms);
  for (auto& [name, c] : children_) {
    if (!c.running || name == except) continue;
    if (!c.process.Wait(static_cast<int>(deadline.RemainingMs())).ok()) {
      c.process.Kill();
    }
    Ended(c);
  }
}

std::string TailOfFile(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += "    " + l + "\n";
  return out;
}

}  // namespace fabps::launch
