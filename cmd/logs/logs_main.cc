// fabps-logs: a run directory's logs merged by time (cmd/logs/
// log_reader.h), each line after the name of its file:
//   pserver-1    | I 2026-12-04 14:27:40.394 pserver-1@node7 main.cc:178] ...
// --role / --index keep one role's or one process's lines; --follow keeps
// printing lines as they are written (like tail -f) until interrupted.
// Exit status: 0, or 2 for bad flags or a run directory that is not one.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "base/cli.h"
#include "cmd/logs/log_reader.h"

namespace {
std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal = sig; }
}  // namespace

int main(int argc, char** argv) {
  std::string run_dir;
  fabps::logs::LogFilter filter;
  bool follow = false, no_prefix = false;
  int poll_ms = 200;
  CLI::App app(
      "fabps logs: the logs of a run directory merged by time, each line "
      "after its file's name",
      "fabps-logs");
  app.add_option("RUN_DIR", run_dir,
                 "the run directory (fabps-launch --run-dir, or where the "
                 "Slurm script gathers the logs)")
      ->required();
  app.add_option("--role", filter.role,
                 "only this role's lines: pserver, trainer, master, ... "
                 "(default: all)");
  app.add_option("--index", filter.index,
                 "only the process with this index (pserver 1, trainer 0; "
                 "-1: all)")
      ->check(CLI::Range(-1, 1 << 20));
  app.add_flag("-f,--follow", follow,
               "keep printing lines as they are written, until Ctrl-C");
  app.add_flag("--no-prefix", no_prefix,
               "print the lines only (JSON logs stay JSON lines)");
  app.add_option("--poll-ms", poll_ms, "with --follow: how often to look")
      ->check(CLI::Range(10, 60'000));
  app.footer(
      "Examples:\n"
      "  fabps-logs runs/20261204-142740\n"
      "  fabps-logs runs/20261204-142740 --role pserver --index 1\n"
      "  fabps-logs runs/20261204-142740 --follow");
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  auto logs = fabps::logs::RunDirLogs::Open(run_dir, filter);
  if (!logs.ok()) {
    std::fprintf(stderr, "fabps-logs: %s\n", logs.status().message().c_str());
    return 2;
  }
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);
  auto print_all = [&](bool drain) {
    std::string file;
    while (auto line = (*logs)->Next(&file, drain)) {
      if (g_signal != 0) return;
      if (no_prefix) {
        std::printf("%s\n", line->text.c_str());
      } else {
        if (file.size() > 4) file.resize(file.size() - 4);  // ".log"
        std::printf("%-14s | %s\n", file.c_str(), line->text.c_str());
      }
    }
    std::fflush(stdout);
  };
  print_all(/*drain=*/!follow);
  while (follow && g_signal == 0 && !std::ferror(stdout)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
    (*logs)->Rescan();
    print_all(/*drain=*/false);
  }
  return std::ferror(stdout) ? 1 : 0;
}
