// Fashion-MNIST records as written by fabps-convert-fashion-mnist: 1 label
// byte (0..9) then 784 pixel bytes, row-major 28x28. Parsing, loading a
// whole test set from recordio shards, and evaluating the model on it.
//
// Every record is checked before use: a record of the wrong length or with a
// label above 9 is counted and skipped, never trusted.
#ifndef FABPS_EXAMPLES_FASHION_MNIST_FASHION_DATA_H_
#define FABPS_EXAMPLES_FASHION_MNIST_FASHION_DATA_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "examples/fashion_mnist/mlp.h"

namespace fabps::examples::fashion_mnist {

constexpr size_t kRecordBytes = 1 + kPixels;

// On a well-formed record writes its 784 pixels scaled to [0, 1] into
// `pixels` and its label into *label and returns true; returns false (and
// writes nothing) otherwise.
bool ParseRecord(std::string_view record, float* pixels, int* label);

// The files named by --test-data: a directory means every regular file in it
// whose name does not start with '.' or end with ".tmp" (a writer's
// temporary); anything else is a glob(3) pattern. Sorted. NotFound when
// nothing matches.
Result<std::vector<std::string>> ExpandDataFiles(
    const std::string& dir_or_glob);

struct LabeledImages {
  Mlp<float>::Matrix x;  // one example per row
  std::vector<int> labels;
  int64_t bad_records = 0;  // skipped: wrong length or label > 9
};

// Reads every record of `files` (recordio). Corrupt chunks are an error.
Result<LabeledImages> LoadLabeledImages(const std::vector<std::string>& files);

struct Evaluation {
  double accuracy = 0;  // fraction of examples whose arg-max is the label
  double loss = 0;      // mean cross-entropy
};

// Evaluates `params` on all of `data` in batches of `batch` rows.
// `data` must hold at least one example.
Evaluation EvaluateModel(const MlpParams<float>& params,
                         const LabeledImages& data, int batch, Mlp<float>* mlp);

}  // namespace fabps::examples::fashion_mnist

#endif  // FABPS_EXAMPLES_FASHION_MNIST_FASHION_DATA_H_
