// fabps-status: the state of a running job, from its coordination store and
// its daemons (cmd/status/job_status.h). A table by default, JSON with
// -o json. Exit status: 0 healthy, 1 unhealthy (no master, a missing or
// silent pserver index), 2 bad flags or an unreadable store.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>

#include "base/cli.h"
#include "cmd/status/job_status.h"
#include "coord/store.h"

int main(int argc, char** argv) {
  std::string store_spec, job = "default", output = "table";
  int timeout_ms = 2000;
  CLI::App app("fabps status: who serves a job, its progress and health",
               "fabps-status");
  app.add_option("--store", store_spec,
                 "the job's coordination store (local:/dir or etcd:http://...)")
      ->required();
  app.add_option("--job", job, "job name in the store");
  app.add_option("-o,--output", output, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
  app.add_option("--timeout-ms", timeout_ms, "per store call and per RPC")
      ->check(CLI::Range(1, 600'000));
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  fabps::Status valid = fabps::coord::ValidateJobName(job);
  if (!valid.ok()) {
    std::fprintf(stderr, "fabps-status: --job: %s\n", valid.message().c_str());
    return 2;
  }
  fabps::coord::StoreOptions so;
  so.spec = store_spec;
  so.job = job;
  so.timeout_ms = timeout_ms;
  auto store = fabps::coord::OpenStore(so);
  if (!store.ok()) {
    std::fprintf(stderr, "fabps-status: --store: %s\n",
                 store.status().ToString().c_str());
    return 2;
  }
  auto view = fabps::status::GatherJobStatus(store->get(), job, timeout_ms);
  if (!view.ok()) {
    std::fprintf(stderr, "fabps-status: reading the job: %s\n",
                 view.status().ToString().c_str());
    return 2;
  }
  int64_t now = ::time(nullptr);
  std::string text = output == "json" ? fabps::status::FormatJson(*view, now)
                                      : fabps::status::FormatTable(*view, now);
  std::fputs(text.c_str(), stdout);
  return view->healthy() ? 0 : 1;
}
