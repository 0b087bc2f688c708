// The example MLP and model files (trainer/model_file.h): the parameter
// specs the job declares, loading a model file into MlpParams, and
// --evaluate (a model file's test accuracy without any fabps daemon).
//
// Thread safety: reentrant.
#ifndef FABPS_EXAMPLES_FASHION_MNIST_MLP_MODEL_FILE_H_
#define FABPS_EXAMPLES_FASHION_MNIST_MLP_MODEL_FILE_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "examples/fashion_mnist/mlp.h"
#include "examples/fashion_mnist/trainer_flags.h"
#include "trainer/pserver_client.h"

namespace fabps::examples::fashion_mnist {

// The six tensors as parameters: float32, shape [rows, cols] or [rows].
std::vector<trainer::ParamSpec> MlpParamSpecs();

// Reads the model file at `path` into *params; InvalidArgument naming the
// tensor when the file's tensors are not exactly MlpParamSpecs() (then
// *params is unchanged), the file's own errors otherwise.
Status LoadMlpModel(const std::string& path, MlpParams<float>* params);

// --evaluate: loads config.evaluate, measures it on config.test_data and
// prints one JSON line
//   {"event":"evaluate","model":"m.safetensors","test_examples":10000,
//    "test_accuracy":0.85,"test_loss":0.41}
// (numbers formatted as the job's pass lines, so equal models print equal
// accuracies).
Status EvaluateModelFile(const TrainerConfig& config);

}  // namespace fabps::examples::fashion_mnist

#endif  // FABPS_EXAMPLES_FASHION_MNIST_MLP_MODEL_FILE_H_
