// fabps-launch: runs a whole local fabps job from one command (launcher.h):
// a model (model_spec.h: --model), its data, a master and a standby master,
// --pservers pservers and --trainers trainers finding each other through
// the store (the embedded local store by default, or etcd: --etcd
// ENDPOINTS, or --start-etcd to run one), live progress, supervision,
// fault injection (--kill-random), the status page (--status-port) and a
// summary at the end. Every process logs to its own file in the run
// directory. The job's processes share a random job token
// ($FABPS_JOB_TOKEN unless already set); --tls puts the control plane on
// mutual TLS with a throw-away CA.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "base/cli.h"
#include "base/log.h"
#include "cmd/launch/job_credentials.h"
#include "cmd/launch/launch_flags.h"
#include "cmd/launch/launcher.h"
#include "cmd/launch/model_spec.h"

int main(int argc, char** argv) {
  using namespace fabps::launch;
  LaunchFlags f;
  CLI::App app("fabps-launch: a local fabps training job from one command",
               "fabps-launch");
  AddLaunchFlags(app, &f);
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  fabps::SetLogRole("launch");
  ModelSpec* model = FindModel(f.model);
  fabps::Status s = ResolveLaunchFlags(app, *model, &f);
  if (!s.ok()) {
    std::fprintf(stderr, "fabps-launch: %s\n", s.message().c_str());
    return 2;
  }
  SetJobTokenUnlessGiven();
  if (f.tls && std::getenv("FABPS_TLS_CERT") == nullptr &&
      !MakeThrowAwayTls(f.run_dir)) {
    return 2;
  }
  fabps::SetLogLevel(fabps::LogLevel::kWarning);
  InstallStopSignals();
  return Launcher(std::move(f), model).Run();
}
