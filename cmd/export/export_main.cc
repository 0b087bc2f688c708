// fabps-export: a model as one safetensors file (trainer/model_file.h).
//
//   fabps-export --checkpoints DIR... -o model.safetensors
//       offline, from the newest good checkpoint of every shard found in the
//       directories, merged by the layout the files record;
//       --with-optimizer-state FILE also writes the optimizer state there.
//   fabps-export --store SPEC --job NAME -o model.safetensors
//   fabps-export --pservers HOST:PORT,... -o model.safetensors
//       from a running job: pulls every parameter from its pservers.
//
// Exit status: 0 written, 1 the export failed (said on stderr), 2 bad flags.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>

#include "base/cli.h"
#include "base/deadline.h"
#include "coord/store.h"
#include "pserver/checkpointed_model.h"
#include "trainer/model_file.h"
#include "trainer/pserver_client.h"

namespace {

int Fail(const std::string& what, const fabps::Status& s) {
  std::fprintf(stderr, "fabps-export: %s: %s\n", what.c_str(),
               s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> checkpoint_dirs, pservers;
  std::string output, state_output, store_spec, job = "default";
  std::string provider = "auto", interface;
  int timeout_ms = 60'000;
  std::optional<int64_t> since_ms;
  CLI::App app("fabps export: a job's model as one safetensors file",
               "fabps-export");
  auto* offline = app.add_option(
      "--checkpoints", checkpoint_dirs,
      "directories holding the pservers' checkpoint files, for an offline "
      "export (default: none, export from a running job)");
  auto* store_opt = app.add_option(
      "--store", store_spec,
      "a running job's coordination store, local:/dir or etcd:http://... "
      "(default: none)");
  auto* ps_opt =
      app.add_option(
             "--pservers", pservers,
             "a running job's pserver addresses host:port, pserver 0 first "
             "(default: none)")
          ->delimiter(',');
  app.add_option("--job", job, "job name in the store");
  app.add_option("-o,--output", output, "the model file to write")->required();
  app.add_option("--with-optimizer-state", state_output,
                 "also write the optimizer state into this file, only with "
                 "--checkpoints (default: none, left out)")
      ->needs(offline);
  app.add_option("--since", since_ms,
                 "a delta for serving, only with --checkpoints: hashed "
                 "tables' rows updated and ids evicted at or after this unix "
                 "time in ms, the fabps.reached_ms of the export it follows "
                 "(default: none, a full export)")

      ->needs(offline);
  app.add_option("--provider", provider,
                 "fabric provider for pulling from a running job");
  app.add_option("--interface", interface,
                 "fabric interface address (default: the provider's choice)");
  app.add_option("--timeout-ms", timeout_ms,
                 "deadline of the whole pull from a running job")
      ->check(CLI::Range(1, 3'600'000));
  offline->excludes(store_opt)->excludes(ps_opt);
  store_opt->excludes(ps_opt);
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  if (checkpoint_dirs.empty() && store_spec.empty() && pservers.empty()) {
    std::fprintf(stderr,
                 "fabps-export: give --checkpoints, --store or --pservers\n");
    return 2;
  }
  if (fabps::Status v = fabps::coord::ValidateJobName(job); !v.ok()) {
    std::fprintf(stderr, "fabps-export: --job: %s\n", v.message().c_str());
    return 2;
  }

  if (!checkpoint_dirs.empty()) {
    auto model = fabps::pserver::ReadNewestCheckpoints(checkpoint_dirs);
    if (!model.ok()) return Fail("reading checkpoints", model.status());
    std::string source = "checkpoints";
    for (const std::string& f : model->files) source += " " + f;
    fabps::Status s = fabps::pserver::WriteCheckpointedModel(
        *model, output, state_output, source, since_ms);
    if (!s.ok()) return Fail("writing " + output, s);
    std::printf("wrote %s: %zu parameters from %zu shards, reached %lld ms\n",
                output.c_str(), model->layout.params().size(),
                model->files.size(), static_cast<long long>(model->reached_ms));
    return 0;
  }

  fabps::trainer::PServerClientOptions o;
  o.addresses = pservers;
  o.store_spec = store_spec;
  o.job = job;
  o.provider = provider;
  o.interface_address = interface;
  o.init_wait_ms = timeout_ms;
  o.rpc_timeout_ms = std::min(timeout_ms, 10'000);
  auto client = fabps::trainer::PServerClient::Connect(o);
  if (!client.ok()) return Fail("connecting to the pservers", client.status());
  fabps::Status s = fabps::trainer::ExportModel(
      client->get(), output, "job " + job, fabps::Deadline::InMs(timeout_ms));
  if (!s.ok()) return Fail("exporting", s);
  std::printf("wrote %s from job %s\n", output.c_str(), job.c_str());
  return 0;
}
