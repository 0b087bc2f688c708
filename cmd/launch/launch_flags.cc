#include "cmd/launch/launch_flags.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "cmd/launch/model_spec.h"

namespace fabps::launch {
namespace {

const char kExamples[] =
    "Examples:\n"
    "  fabps-launch                            5 passes, 2 pservers, 2 "
    "trainers, local store\n"
    "  fabps-launch --passes 2 --trainers 3 --provider shm\n"
    "  fabps-launch --kill-random 2            kill -9 and restart a random "
    "process twice\n"
    "  fabps-launch --kill-random 2 --kill-seed 7  the same victims as last "
    "time it printed seed 7\n"
    "  fabps-launch --kill-random 1 --kill-target master --start-etcd\n"
    "                                          the standby master takes "
    "over, on etcd\n"
    "  fabps-launch --trainer torch            the PyTorch trainer "
    "(examples/fashion_mnist_torch)\n"
    "  fabps-launch --tls                      control plane over mutual "
    "TLS\n"
    "  fabps-launch --model ctr                CTR: a hashed embedding "
    "table moved by rows, AUC vs planted\n"
    "  fabps-launch --run-dir /tmp/job         logs, metrics, checkpoints "
    "there\n"
    "  fabps-launch --status-port 8080         the job's page at "
    "http://127.0.0.1:8080/";

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The help's list of models, each with the defaults it gives the shared
// flags and what it takes. No line starts with "  --": tools/run.sh reads
// those as flags.
std::string ModelsHelp() {
  std::ostringstream out;
  out << "Models (--model NAME; a flag left out takes the model's default):";
  for (const ModelSpec* m : Models()) {
    const ModelDefaults& d = m->defaults();
    out << "\n  " << m->name() << ": " << m->summary() << "\n    defaults: "
        << "--job " << d.job << " --batch " << d.batch << " --rule " << d.rule
        << " --lr " << d.lr;
    if (!std::isnan(d.lr_final)) out << " --lr-final " << d.lr_final;
    out << " --save-period " << d.save_period << " --trainer "
        << d.trainers.front() << "\n    --data-dir ~/.cache/fabps/"
        << m->DataDirName() << "; rules: " << Join(d.rules, ", ")
        << "; trainers: " << Join(d.trainers, ", ")
        << "; modes: " << (d.sync ? "async, sync" : "async");
    if (!d.init_from_trainer.empty())
      out << "; --init-from with --trainer " << d.init_from_trainer;
  }
  return out.str();
}

// The union over the models, in first-seen order.
template <typename F>
std::vector<std::string> AllOf(F field) {
  std::vector<std::string> all;
  for (const ModelSpec* m : Models())
    for (const std::string& v : field(m->defaults()))
      if (std::find(all.begin(), all.end(), v) == all.end()) all.push_back(v);
  return all;
}

std::string InvalidFlag(const std::string& flag, const std::string& why) {
  return flag + ": " + why;
}

}  // namespace

void AddLaunchFlags(CLI::App& app, LaunchFlags* f) {
  app.footer(std::string(kExamples) + "\n\n" + ModelsHelp());
  std::vector<std::string> names;
  for (const ModelSpec* m : Models()) names.push_back(m->name());
  app.add_option("--model", f->model,
                 "what to train: " + Join(names, ", ") + " (see Models below)")
      ->check(CLI::IsMember(names));
  app.add_option("--pservers", f->pservers, "parameter servers")
      ->check(CLI::Range(1, 64));
  app.add_option("--trainers", f->trainers, "trainers")
      ->check(CLI::Range(1, 64));
  app.add_option("--provider", f->provider,
                 "fabric: auto, verbs;ofi_rxm, tcp;ofi_rxm, shm, sockets");
  app.add_option("--passes", f->passes, "passes over the training set")
      ->check(CLI::Range(1, 1000));
  const char* model_default = " (default: the model's)";
  app.add_option("--batch", f->batch,
                 std::string("mini-batch size") + model_default)
      ->check(CLI::Range(1, 65536));
  app.add_option("--rule", f->rule, std::string("update rule") + model_default)
      ->check(
          CLI::IsMember(AllOf([](const ModelDefaults& d) { return d.rules; })));
  app.add_option("--lr", f->lr, std::string("learning rate") + model_default)
      ->check(CLI::Range(1e-9, 10.0));
  app.add_option(
         "--lr-final", f->lr_final,
         std::string("learning rate at the end (linear decay)") + model_default)
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--trainer", f->trainer,
                 "trainer program: cpp (Eigen) or torch (PyTorch through the "
                 "fabps Python package)" +
                     std::string(model_default))
      ->check(CLI::IsMember(
          AllOf([](const ModelDefaults& d) { return d.trainers; })));
  app.add_option(
      "--run-dir", f->run_dir,
      "where logs, metrics and checkpoints go (default: runs/<time>)");
  app.add_option("--data-dir", f->data_dir,
                 "converted dataset cache (default: the model's, under "
                 "~/.cache/fabps)");
  app.add_option("--bin-dir", f->bin_dir,
                 "build tree with the fabps binaries (default: this one's)");
  app.add_option(
      "--etcd", f->etcd,
      "etcd endpoints (http://host:port,...) instead of the local store "
      "(default: none: the embedded local store in <run-dir>/store)");
  app.add_flag("--start-etcd", f->start_etcd, "run a local etcd for this job");
  app.add_flag("--tls", f->tls,
               "control plane over mutual TLS with a throw-away CA made in "
               "<run-dir>/tls (needs openssl; $FABPS_TLS_* set by the caller "
               "are used as they are)");
  app.add_option(
         "--kill-random", f->kill_random,
         "kill -9 and restart a random process of --kill-target N times")
      ->check(CLI::Range(0, 1000));
  app.add_option("--kill-every", f->kill_every_s,
                 "seconds between kills, from the start of training")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--kill-target", f->kill_target, "what --kill-random may kill")
      ->check(CLI::IsMember({"any", "trainer", "pserver", "master"}));
  app.add_option("--kill-seed", f->kill_seed,
                 "seed of --kill-random's victims (default 0: a random one, "
                 "printed; the same seed replays the same victims)");
  app.add_option("--task-timeout", f->task_timeout_ms,
                 "ms before the master hands a pending task out again")
      ->check(CLI::Range(100, 3600000));
  app.add_option(
         "--save-period", f->save_period,
         std::string("seconds between pserver checkpoints") + model_default)
      ->check(CLI::Range(0, 86400));
  app.add_option("--job", f->job, std::string("job name") + model_default);
  app.add_option("--seed", f->seed, "initialization seed");
  app.add_option("--init-from", f->init_from,
                 "start from this safetensors model file instead of --seed, "
                 "with the models and trainers that take it (default: none)");
  app.add_option("--mode", f->mode,
                 "async (every push applied as it comes) or sync (each step "
                 "sums every trainer's gradients; with the models that take "
                 "it; docs/sync.md)")
      ->check(CLI::IsMember({"async", "sync"}));
  app.add_option("--step-deadline-ms", f->step_deadline_ms,
                 "with --mode sync: a step waiting this long for a trainer "
                 "is applied without it (the pservers' flag)")
      ->check(CLI::Range(100, 3600000));
  app.add_option("--restarts-per-role", f->restarts_per_role,
                 "restarts of the processes of one role (trainer, pserver, "
                 "master, etcd) before the job fails")
      ->check(CLI::Range(0, 10000));
  app.add_option("--stall-timeout", f->stall_timeout_s,
                 "seconds without progress (no task done, no update applied) "
                 "before the job fails with a diagnosis")
      ->check(CLI::Range(5.0, 86400.0));
  app.add_option("--unresponsive-timeout", f->unresponsive_s,
                 "seconds a serving pserver may answer no status call before "
                 "it is killed and restarted (frozen)")
      ->check(CLI::Range(2.0, 86400.0));
  app.add_option("--lease-ttl", f->lease_ttl_s,
                 "seconds: the master's and the pservers' leases in the "
                 "store (rides out outages of 2/3 of it; a killed process's "
                 "restart waits up to it)")
      ->check(CLI::Range(2, 600));
  app.add_option("--status-port", f->status_port,
                 "serve the job's status page (HTML, /status.json, the "
                 "logs) on this port (0: off, or a free port with "
                 "--status-port-file)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--status-port-file", f->status_port_file,
                 "write the status page's port here once serving (default: "
                 "none)");
  app.add_option("--status-host", f->status_host,
                 "address the status page binds");
  app.add_option("--status-linger", f->status_linger_s,
                 "seconds the status page keeps serving the final state "
                 "after the job ended")
      ->check(CLI::Range(0.0, 86400.0));
  for (ModelSpec* m : Models()) m->AddFlags(app);
}

Status ResolveLaunchFlags(const CLI::App& app, ModelSpec& model,
                          LaunchFlags* f) {
  const ModelDefaults& d = model.defaults();
  auto given = [&app](const char* flag) {
    return app.get_option(flag)->count() > 0;
  };
  if (!given("--batch")) f->batch = d.batch;
  if (!given("--rule")) f->rule = d.rule;
  if (!given("--lr")) f->lr = d.lr;
  if (!given("--lr-final")) f->lr_final = d.lr_final;
  if (!given("--save-period")) f->save_period = d.save_period;
  if (!given("--job")) f->job = d.job;
  if (!given("--trainer")) f->trainer = d.trainers.front();
  const std::string of_model = "--model " + model.name();
  if (std::find(d.trainers.begin(), d.trainers.end(), f->trainer) ==
      d.trainers.end()) {
    return Status::InvalidArgument(InvalidFlag(
        "--trainer", of_model + " has the trainers " + Join(d.trainers, ", ")));
  }
  if (std::find(d.rules.begin(), d.rules.end(), f->rule) == d.rules.end()) {
    return Status::InvalidArgument(
        InvalidFlag("--rule", of_model + " takes " + Join(d.rules, ", ")));
  }
  if (!f->init_from.empty() && f->trainer != d.init_from_trainer) {
    return Status::InvalidArgument(InvalidFlag(
        "--init-from", d.init_from_trainer.empty()
                           ? of_model + " does not take it"
                           : "only with --trainer " + d.init_from_trainer +
                                 " of " + of_model));
  }
  if (f->Sync() && !d.sync) {
    return Status::InvalidArgument(InvalidFlag(
        "--mode sync", of_model + " does not take it (its trainers push "
                                  "without a step)"));
  }
  FABPS_RETURN_IF_ERROR(model.ResolveFlags(app, *f));
  if (f->run_dir.empty()) {
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", std::localtime(&t));
    f->run_dir = std::string("runs/") + buf;
  }
  f->run_dir = std::filesystem::absolute(f->run_dir).string();
  if (f->data_dir.empty()) {
    const char* home = std::getenv("HOME");
    f->data_dir = std::string(home ? home : "/tmp") + "/.cache/fabps/" +
                  model.DataDirName();
  }
  if (f->bin_dir.empty()) {
    // <build>/cmd/launch/fabps-launch
    f->bin_dir = std::filesystem::canonical("/proc/self/exe")
                     .parent_path()
                     .parent_path()
                     .parent_path()
                     .string();
  }
  return Status::OK();
}

}  // namespace fabps::launch
