// fabps-reshard: a stopped job's checkpoints re-cut for another number of
// pservers (tools/reshard/reshard_job.h).
//
//   fabps-reshard --store SPEC --job NAME --num-pservers M
//       the job's pservers stopped: reads the newest good checkpoints of its
//       N pservers where the store recorded them, writes the checkpoints of
//       M pservers, and sets the job's pserver count to M; start M pservers
//       and the trainers, as after any restart.
//   fabps-reshard --checkpoints DIR... --num-pservers M --out ROOT
//       offline: ROOT/ps-<j> for j < M.
//
// Parameters and optimizer state are bit-identical before and after.
// Exit status: 0 done, 1 failed (nothing changed, said on stderr), 2 bad
// flags.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "base/cli.h"
#include "coord/store.h"
#include "tools/reshard/reshard_job.h"

int main(int argc, char** argv) {
  fabps::tools::ReshardRequest r;
  CLI::App app(
      "fabps reshard: a stopped job's checkpoints cut for another number of "
      "pservers",
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
  offline->excludes(store)->needs(out);
  out->needs(offline);
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  if (r.store_spec.empty() && r.checkpoint_dirs.empty()) {
    std::fprintf(stderr, "fabps-reshard: give --store or --checkpoints\n");
    return 2;
  }
  if (fabps::Status v = fabps::coord::ValidateJobName(r.job); !v.ok()) {
    std::fprintf(stderr, "fabps-reshard: --job: %s\n", v.message().c_str());
    return 2;
  }
  auto done = fabps::tools::ReshardJob(r);
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
