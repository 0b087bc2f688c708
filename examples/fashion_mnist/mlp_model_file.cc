#include "examples/fashion_mnist/mlp_model_file.h"

#include <cstring>

#include "examples/fashion_mnist/fashion_data.h"
#include "trainer/metrics_log.h"
#include "trainer/model_file.h"

namespace fabps::examples::fashion_mnist {

std::vector<trainer::ParamSpec> MlpParamSpecs() {
  std::vector<trainer::ParamSpec> specs;
  for (const TensorShape& t : MlpTensorShapes()) {
    trainer::ParamSpec spec{t.name, trainer::DType::kFloat32, {}};
    spec.shape.push_back(static_cast<uint64_t>(t.rows));
    if (t.cols) spec.shape.push_back(static_cast<uint64_t>(t.cols));
    specs.push_back(std::move(spec));
  }
  return specs;
}

Status LoadMlpModel(const std::string& path, MlpParams<float>* params) {
  FABPS_ASSIGN_OR_RETURN(std::vector<std::string> values,
                         trainer::ReadModelFor(path, MlpParamSpecs()));
  for (int i = 0; i < kNumTensors; ++i) {
    // ReadModelFor checked each size against the spec.
    std::memcpy(params->tensors[i].data(), values[i].data(), values[i].size());
  }
  return Status::OK();
}

Status EvaluateModelFile(const TrainerConfig& config) {
  MlpParams<float> params;
  FABPS_RETURN_IF_ERROR(LoadMlpModel(config.evaluate, &params));
  FABPS_ASSIGN_OR_RETURN(auto files, ExpandDataFiles(config.test_data));
  FABPS_ASSIGN_OR_RETURN(LabeledImages test_set, LoadLabeledImages(files));
  if (test_set.labels.empty()) {
    return Status::InvalidArgument("--test-data: no valid record in " +
                                   config.test_data);
  }
  Mlp<float> mlp;
  Evaluation e = EvaluateModel(params, test_set, config.eval_batch, &mlp);
  FABPS_ASSIGN_OR_RETURN(auto log,
                         trainer::MetricsLog::Open(config.metrics_file));
  log->Write(trainer::MetricsLine::Evaluate(
                 config.evaluate, static_cast<int64_t>(test_set.labels.size()))
                 .Add(trainer::metrics_key::kTestAccuracy, e.accuracy)
                 .Add(trainer::metrics_key::kTestLoss, e.loss));
  return Status::OK();
}

}  // namespace fabps::examples::fashion_mnist
