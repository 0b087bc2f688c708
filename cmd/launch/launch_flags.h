// LaunchFlags: fabps-launch's command line, parsed. The flags every model
// shares live here; a flag whose default depends on the model (--batch,
// --rule, --lr, --lr-final, --save-period, --job, --data-dir, --trainer)
// takes the model's default (model_spec.h) when not given, and each model
// adds flags of its own (ModelSpec::AddFlags).
#ifndef FABPS_CMD_LAUNCH_LAUNCH_FLAGS_H_
#define FABPS_CMD_LAUNCH_LAUNCH_FLAGS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace fabps::launch {

class ModelSpec;

struct LaunchFlags {
  std::string model = "fashion-mnist";
  int pservers = 2;
  int trainers = 2;
  std::string provider = "auto";
  int passes = 5;
  // The model's defaults unless given (ResolveModelDefaults).
  int batch = 0;
  std::string rule;
  double lr = 0;
  double lr_final = 0;
  int save_period = 0;
  std::string job;
  std::string data_dir;
  std::string trainer;  // a program of the model: cpp, torch

  std::string run_dir;
  std::string bin_dir;
  std::string etcd;
  bool start_etcd = false;
  bool tls = false;
  int kill_random = 0;
  double kill_every_s = 15;
  std::string kill_target = "any";  // any, trainer, pserver, master
  uint64_t kill_seed = 0;           // 0: a random one (printed)
  int task_timeout_ms = 10000;
  uint64_t seed = 1;
  std::string init_from;  // a model file the job starts from; "": --seed
  // async, or sync (docs/sync.md): the pservers get --mode sync
  // --num-trainers <trainers> --step-deadline-ms.
  std::string mode = "async";
  int step_deadline_ms = 10000;
  // Supervision (supervisor.h) and liveness.
  int restarts_per_role = 10;
  double stall_timeout_s = 180;
  double unresponsive_s = 15;
  // 10 s: the master and the pservers keep their claims through a store
  // outage of 6.6 s at least (renewals every TTL/3), and a killed one's
  // restart takes its index back after at most 10 s (docs/leases.md).
  int lease_ttl_s = 10;
  // The status page (status_page.h).
  int status_port = 0;  // 0: off unless a port file is given
  std::string status_port_file;
  std::string status_host = "127.0.0.1";
  double status_linger_s = 0;

  bool Sync() const { return mode == "sync"; }
  bool StatusPageOn() const {
    return status_port != 0 || !status_port_file.empty();
  }
  // A program of the build tree (bin_dir), e.g. "master/fabps-master".
  std::string Bin(const std::string& rel) const { return bin_dir + "/" + rel; }
};

// Adds every flag to `app`, each model's own included, and the help's
// footer (examples, and each model with its defaults).
void AddLaunchFlags(CLI::App& app, LaunchFlags* f);

// After parsing: fills what was not given from `model`'s defaults, the run,
// data and binary directories, and checks the combinations the model does
// not take, then lets the model resolve its own flags
// (ModelSpec::ResolveFlags). InvalidArgument with the message for the user
// ("--rule: ...").
Status ResolveLaunchFlags(const CLI::App& app, ModelSpec& model,
                          LaunchFlags* f);

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_LAUNCH_FLAGS_H_
