// fabps-reshard: a stopped job's checkpoints re-cut for another number of
// pservers (reshard/reshard_job.h).
//
//   fabps-reshard --store SPEC --job NAME --num-pservers M
//       the job's pservers stopped: reads the newest good checkpoints of its
//       N pservers where the store recorded them, writes the checkpoints of
//       M pservers, and sets the job's pserver count to M; start M pservers
//       and the trainers, as after any restart.
//   fabps-reshard --checkpoints DIR... --num-pservers M --out ROOT
//       offline: ROOT/ps-<j> for j < M.
//   fabps-reshard --run-dir DIR --num-pservers M
//       a job fabps-launch runs in DIR, while it runs: the launcher stops
//       its pservers (each checkpoints), re-shards and starts M; the
//       trainers follow (cmd/launch/pserver_resize.h). Waits for
//       the launcher's answer (--timeout).
//
// Parameters and optimizer state are bit-identical before and after.
// Exit status: 0 done, 1 failed (nothing changed, said on stderr), 2 bad
// flags.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <thread>

#include "base/cli.h"
#include "base/deadline.h"
#include "base/file_util.h"
#include "coord/store.h"
#include "reshard/reshard_job.h"

namespace {

// Asks the launcher running the job in `run_dir` to re-shard it to `count`
// pservers and prints its answer.
int AskLauncher(const std::string& run_dir, uint32_t count, int timeout_s) {
  const std::string request = run_dir + "/resize.request";
  const std::string done = run_dir + "/resize.done";
  ::unlink(done.c_str());
  fabps::Status s =
      fabps::WriteFileAtomically(request, std::to_string(count) + "\n");
  if (!s.ok()) {
    std::fprintf(stderr, "fabps-reshard: %s\n", s.ToString().c_str());
    return 1;
  }
  const fabps::Deadline deadline = fabps::Deadline::InMs(timeout_s * 1000LL);
  while (!deadline.Expired()) {
    auto answer = fabps::ReadWholeFile(done, 4096);
    if (answer.ok() && !answer->empty() && answer->back() == '\n') {
      std::printf("fabps-launch: %s", answer->c_str());
      return answer->rfind("ok", 0) == 0 ? 0 : 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::unlink(request.c_str());
  std::fprintf(stderr,
               "fabps-reshard: no answer from a launcher in %s within %d s "
               "(does fabps-launch run a job there?)\n",
               run_dir.c_str(), timeout_s);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  fabps::reshard::ReshardRequest r;
  std::string run_dir;
  int timeout_s = 300;
  CLI::App app(
      "fabps reshard: a job's model cut for another number of pservers "
      "(a stopped job, or a running fabps-launch job with --run-dir)",
      "fabps-reshard");
  app.add_option("--num-pservers", r.new_count, "the new number of pservers")
      ->required()
      ->check(CLI::Range(1, 120));
  auto* store = app.add_option(
      "--store", r.store_spec,
      "the job's coordination store, local:/dir or etcd:http://... "
      "(default: none: offline, with --checkpoints and --out)");
  app.add_option("--job", r.job, "job name in the store");
  app.add_option("--checkpoint-dir", r.checkpoint_root,
                 "with --store: new pservers' directories go to "
                 "<dir>/ps-<i> (default: beside pserver 0's)")
      ->needs(store);
  auto* offline = app.add_option(
      "--checkpoints", r.checkpoint_dirs,
      "offline: directories holding the old pservers' checkpoints "
      "(default: none)");
  auto* out = app.add_option("--out", r.output_root,
                             "offline: write <out>/ps-<j> (default: none)");
  auto* live = app.add_option(
      "--run-dir", run_dir,
      "a running fabps-launch job's run directory: re-shard it while it "
      "runs (default: none)");
  app.add_option("--timeout", timeout_s,
                 "with --run-dir: seconds to wait for the launcher's answer")
      ->check(CLI::Range(1, 86400));
  offline->excludes(store)->needs(out);
  out->needs(offline);
  live->excludes(store)->excludes(offline);
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  if (!run_dir.empty()) return AskLauncher(run_dir, r.new_count, timeout_s);
  if (r.store_spec.empty() && r.checkpoint_dirs.empty()) {
    std::fprintf(stderr,
                 "fabps-reshard: give --store, --checkpoints or --run-dir\n");
    return 2;
  }
  if (fabps::Status v = fabps::coord::ValidateJobName(r.job); !v.ok()) {
    std::fprintf(stderr, "fabps-reshard: --job: %s\n", v.message().c_str());
    return 2;
  }
  auto done = fabps::reshard::ReshardJob(r);
  if (!done.ok()) {
    std::fprintf(stderr, "fabps-reshard: %s\n",
                 done.status().ToString().c_str());
    return 1;
  }
  std::printf("re-sharded %u -> %u pservers (%llu blocks):\n", done->old_count,
              r.new_count, static_cast<unsigned long long>(done->blocks));
  for (const std::string& f : done->files) std::printf("  %s\n", f.c_str());
  return 0;
}
