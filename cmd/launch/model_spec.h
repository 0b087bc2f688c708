// ModelSpec: what fabps-launch knows about one model it can train. The
// launcher itself is model-agnostic: it starts the store, the masters and
// the pservers, and asks the model's spec how to prepare the data, what
// each trainer's command line is, which defaults the shared flags take and
// which test metric the trainers' pass lines report
// (docs/formats/metrics_line.md).
//
// A model is one file (e.g. ctr_model.cc) that defines a ModelSpec and
// registers it with a static ModelRegistration; the launcher finds it by
// --model NAME, and --help lists it with its defaults. The file is listed in
// the launcher's CMakeLists.txt beside the others.
//
// Thread safety: the launcher's main thread only.
#ifndef FABPS_CMD_LAUNCH_MODEL_SPEC_H_
#define FABPS_CMD_LAUNCH_MODEL_SPEC_H_

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "cmd/launch/launch_flags.h"
#include "cmd/launch/run_dir.h"

namespace fabps::launch {

// The values the shared flags take for this model when not given.
struct ModelDefaults {
  std::string job;
  int batch = 64;
  std::string rule;
  double lr = 0;
  double lr_final = 0;  // NaN: the model's trainers take no --lr-final
  int save_period = 10;
  // The trainer programs (--trainer); the first is the default.
  std::vector<std::string> trainers;
  // The update rules its trainers take (--rule).
  std::vector<std::string> rules;
  bool sync = false;  // takes --mode sync (its trainers push with a step)
  // The trainer that takes --init-from; "": none does.
  std::string init_from_trainer;
};

// The test metric the model's pass lines report.
struct PassMetric {
  const char* key;    // in the metrics line: "test_accuracy"
  const char* label;  // on the live display and the status page: "acc"
  const char* title;  // the summary's column: "test accuracy"
};

// What the launcher lends a spec while the job starts.
struct ModelContext {
  const LaunchFlags& flags;
  const RunDir& run;
  std::string store_spec;  // "local:...", "etcd:..."
  // Runs a helper program (a converter, a generator) under `name` to its
  // end, its output in the run directory's <name>.log; IOError with the
  // log's tail when it fails.
  std::function<Status(const std::string& name,
                       const std::vector<std::string>& argv)>
      run_helper;
};

class ModelSpec {
 public:
  virtual ~ModelSpec() = default;

  // --model's value, e.g. "ctr".
  virtual std::string name() const = 0;
  // One line for --help: what is trained, from which example.
  virtual std::string summary() const = 0;
  virtual const ModelDefaults& defaults() const = 0;
  virtual PassMetric metric() const = 0;
  // Adds the flags only this model takes (in a group of the help named
  // after it). Called once, before parsing.
  virtual void AddFlags(CLI::App& app) {}
  // Checks and completes those flags once the shared ones are resolved
  // (a default that depends on --mode, flags that go together);
  // InvalidArgument "--flag: why" refuses the command line.
  virtual Status ResolveFlags(const CLI::App& app, const LaunchFlags& flags) {
    return Status::OK();
  }
  // The default --data-dir's last component (under ~/.cache/fabps/).
  virtual std::string DataDirName() const = 0;
  // Makes the training data in flags.data_dir unless it is there already.
  virtual Status PrepareData(const ModelContext& ctx) = 0;
  // Environment variables the trainers need (set before they start).
  virtual std::vector<std::pair<std::string, std::string>> TrainerEnvironment(
      const LaunchFlags& flags) const {
    return {};
  }
  // Trainer `t`'s command line, the program first.
  virtual std::vector<std::string> TrainerArgv(const ModelContext& ctx,
                                               int t) const = 0;
  // A line for the summary after the passes (e.g. how the last pass
  // compares with a reference); "" for none. `last` is the last pass's
  // metric.
  virtual std::string SummaryNote(double last) const { return ""; }
};

// The flags every trainer program of the examples takes (the program
// first): provider, trainer id, data, passes, seed, store, job, metrics
// file and timeout. A spec appends its own.
std::vector<std::string> CommonTrainerArgv(const ModelContext& ctx,
                                           const std::string& program, int t);

// The environment of a trainer that is a /usr/bin/python3 script (the torch
// trainers): PYTHONPATH names the build's fabps package.
std::vector<std::pair<std::string, std::string>> PythonTrainerEnvironment(
    const LaunchFlags& flags);

// Registers a spec at static initialization: one per model file, e.g.
//   const ModelRegistration kRegistration(std::make_unique<CtrModel>());
class ModelRegistration {
 public:
  explicit ModelRegistration(std::unique_ptr<ModelSpec> spec);
};

// Every registered model, by name.
const std::vector<ModelSpec*>& Models();
// nullptr when no model has that name.
ModelSpec* FindModel(const std::string& name);

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_MODEL_SPEC_H_
