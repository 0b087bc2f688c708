// The planted model behind fabps-ctr-gen's synthetic impressions: F fields,
// each with V values drawn with Zipf frequencies (value of rank k, 0-based,
// has probability proportional to 1 / (k + 1)^s, as real CTR data has a
// few very frequent and a long tail of rare features). Value k of field f
// has a planted weight w[f][k] ~ Normal(0, weight_scale) and the feature id
// FeatureId(f, k), a 64-bit hash; an impression's click probability is
//   sigmoid(bias + sum_f w[f][k_f]).
// Everything follows from the seed: the same options give the same data.
//
// Thread safety: a PlantedModel is immutable after construction; Sample
// uses the caller's generator.
#ifndef FABPS_EXAMPLES_CTR_PLANTED_MODEL_H_
#define FABPS_EXAMPLES_CTR_PLANTED_MODEL_H_

#include <cstdint>
#include <random>
#include <vector>

namespace fabps::examples::ctr {

struct PlantedModelOptions {
  int fields = 8;
  int vocab = 10000;  // values per field
  double zipf = 1.1;
  double weight_scale = 0.8;
  double bias = -1.2;
  uint64_t seed = 1;
};

struct Impression {
  int label = 0;
  double logit = 0;           // the planted model's
  std::vector<uint64_t> ids;  // one per field
};

class PlantedModel {
 public:
  explicit PlantedModel(const PlantedModelOptions& options);
  // Draws the values of each field, the logit and the label.
  void Sample(std::mt19937_64& rng, Impression* out) const;
  uint64_t FeatureId(int field, int value) const;

 private:
  PlantedModelOptions o_;
  std::vector<double> cdf_;      // Zipf over ranks, shared by the fields
  std::vector<double> weights_;  // [field * vocab + value]
};

}  // namespace fabps::examples::ctr

#endif  // FABPS_EXAMPLES_CTR_PLANTED_MODEL_H_
