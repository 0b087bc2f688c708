// fabps-supervise: runs one process of a fabps job and restarts it when it
// ends on its own, the way fabps-launch supervises a whole local job (the
// same code: cmd/launch/supervisor.h). One node of a Slurm or bare-metal
// cluster runs each of its roles under it:
//
//   fabps-supervise pserver -- build/pserver/daemon/fabps-pserver --store ...
//
// A program named without a slash is looked up in $PATH, as a shell does.
// The process's output goes where fabps-supervise's goes. It is restarted
// after any end but a clean exit (0: done), an exit code of 2 (its flags
// are wrong) and 127 (it could not be executed), with back-off, up to
// --restarts times; then fabps-supervise exits with the process's exit code (or
// 128 + its signal). SIGTERM or SIGINT is passed on (the process checkpoints
// and exits) and fabps-supervise exits with the process's status.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "base/cli.h"
#include "cmd/launch/process_group.h"
#include "cmd/launch/supervisor.h"

namespace {

std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal = sig; }

// The program as a shell would run it: a name without a slash is looked up
// in $PATH (the first executable file of that name); "" when none is.
std::string FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string role;
  std::vector<std::string> command;
  fabps::launch::SupervisorOptions so;
  int grace_ms = 15000;
  CLI::App app(
      "fabps-supervise: runs one process of a fabps job and restarts it "
      "with back-off when it ends on its own (not after exit 0 or 2)",
      "fabps-supervise");
  app.footer(
      "Example:\n"
      "  fabps-supervise pserver -- fabps-pserver --store etcd:http://h:2379 "
      "--job j --num-pservers 4");
  app.add_option("role", role, "name of the process in messages (pserver)")
      ->required();
  app.add_option("command", command, "the program and its arguments")
      ->required();
  app.add_option("--restarts", so.restarts_per_role,
                 "restarts before giving up")
      ->check(CLI::Range(0, 100000));
  app.add_option("--backoff", so.backoff_initial_s,
                 "seconds before the first restart (doubling after each)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--backoff-max", so.backoff_max_s,
                 "longest wait before a restart, seconds")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--grace-ms", grace_ms,
                 "on SIGTERM: ms the process has to exit before SIGKILL")
      ->check(CLI::Range(0, 3600000));
  app.positionals_at_end();
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  // CLI11 hands the "--" separator on with the command.
  if (!command.empty() && command.front() == "--")
    command.erase(command.begin());
  if (!command.empty()) {
    std::string program = FindProgram(command.front());
    if (program.empty()) {
      std::fprintf(stderr, "command: %s: not found in PATH\n",
                   command.front().c_str());
      return 2;
    }
    command.front() = program;
  }
  if (command.empty()) {
    std::fprintf(stderr, "command: no program given after --\n");
    return 2;
  }
  so.budget_flag = "--restarts";
  so.note = [](const std::string& line) {
    std::fprintf(stderr, "fabps-supervise: %s\n", line.c_str());
  };
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);

  fabps::launch::ProcessGroup group;
  fabps::launch::Supervisor sup(&group, so);
  // An empty log: the process writes where we do.
  fabps::Status s = group.Start(role, command, "");
  if (!s.ok()) {
    std::fprintf(stderr, "fabps-supervise: starting %s: %s\n", role.c_str(),
                 s.ToString().c_str());
    return 1;
  }
  for (;;) {
    if (g_signal != 0) {
      fabps::launch::Child* c = group.Find(role);
      if (!c->running) return 128 + g_signal;
      group.Stop(role, grace_ms);
      return ExitCodeOf(c->wait_status);
    }
    for (const auto& name : group.Reap()) {
      fabps::launch::Child* c = group.Find(name);
      if (WIFEXITED(c->wait_status) && WEXITSTATUS(c->wait_status) == 0)
        return 0;
      s = sup.OnEnded(name);
      if (!s.ok()) {
        std::fprintf(stderr, "fabps-supervise: %s\n", s.message().c_str());
        return ExitCodeOf(c->wait_status);
      }
    }
    s = sup.StartDue();
    if (!s.ok()) {
      std::fprintf(stderr, "fabps-supervise: %s\n", s.ToString().c_str());
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}
