#include "examples/ctr/planted_model.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace fabps::examples::ctr {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

PlantedModel::PlantedModel(const PlantedModelOptions& options) : o_(options) {
  cdf_.resize(static_cast<size_t>(o_.vocab));
  double sum = 0;
  for (int k = 0; k < o_.vocab; k++) {
    sum += std::pow(k + 1.0, -o_.zipf);
    cdf_[k] = sum;
  }
  for (double& c : cdf_) c /= sum;
  std::mt19937_64 rng(SplitMix64(o_.seed ^ 0x5eedULL));
  std::normal_distribution<double> w(0, o_.weight_scale);
  weights_.resize(static_cast<size_t>(o_.fields) * o_.vocab);
  for (double& x : weights_) x = w(rng);
}

uint64_t PlantedModel::FeatureId(int field, int value) const {
  return SplitMix64(SplitMix64(o_.seed) ^ (static_cast<uint64_t>(field) << 32 |
                                           static_cast<uint32_t>(value)));
}

void PlantedModel::Sample(std::mt19937_64& rng, Impression* out) const {
  std::uniform_real_distribution<double> u(0, 1);
  out->ids.resize(static_cast<size_t>(o_.fields));
  double z = o_.bias;
  for (int f = 0; f < o_.fields; f++) {
    auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u(rng));
    int k = static_cast<int>(
        std::min<std::ptrdiff_t>(it - cdf_.begin(), o_.vocab - 1));
    out->ids[f] = FeatureId(f, k);
    z += weights_[static_cast<size_t>(f) * o_.vocab + k];
  }
  out->logit = z;
  out->label = u(rng) < 1 / (1 + std::exp(-z)) ? 1 : 0;
}

}  // namespace fabps::examples::ctr
