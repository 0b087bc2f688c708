#include "cmd/launch/model_spec.h"

#include <algorithm>

namespace fabps::launch {
namespace {

// Function-local: registrations run during static initialization, in any
// order of the files.
std::vector<std::unique_ptr<ModelSpec>>& Registry() {
  static auto* specs = new std::vector<std::unique_ptr<ModelSpec>>();
  return *specs;
}

std::vector<ModelSpec*>& ByName() {
  static auto* models = new std::vector<ModelSpec*>();
  return *models;
}

}  // namespace

ModelRegistration::ModelRegistration(std::unique_ptr<ModelSpec> spec) {
  ModelSpec* s = spec.get();
  Registry().push_back(std::move(spec));
  auto& models = ByName();
  models.insert(std::upper_bound(models.begin(), models.end(), s,
                                 [](const ModelSpec* a, const ModelSpec* b) {
                                   return a->name() < b->name();
                                 }),
                s);
}

const std::vector<ModelSpec*>& Models() { return ByName(); }

ModelSpec* FindModel(const std::string& name) {
  for (ModelSpec* m : Models())
    if (m->name() == name) return m;
  return nullptr;
}

std::vector<std::string> CommonTrainerArgv(const ModelContext& ctx,
                                           const std::string& program, int t) {
  const LaunchFlags& f = ctx.flags;
  return {f.Bin(program),
          "--provider",
          f.provider,
          "--trainer-id",
          std::to_string(t),
          "--dataset",
          f.data_dir + "/train/*",
          "--test-data",
          f.data_dir + "/test/*",
          "--passes",
          std::to_string(f.passes),
          "--seed",
          std::to_string(f.seed),
          "--store",
          ctx.store_spec,
          "--job",
          f.job,
          "--metrics-file",
          ctx.run.Metrics(t),
          "--timeout-ms",
          "10000"};
}

std::vector<std::pair<std::string, std::string>> PythonTrainerEnvironment(
    const LaunchFlags& flags) {
  return {{"PYTHONPATH", flags.Bin("python")}};
}

}  // namespace fabps::launch
