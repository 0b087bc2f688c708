#include "examples/ctr/auc.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

namespace fabps::examples::ctr {

double Auc(const std::vector<double>& scores, const std::vector<int>& labels) {
  const size_t n = scores.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Mann-Whitney: the sum of the positives' ranks (1-based, ties averaged).
  double positive_rank_sum = 0;
  uint64_t positives = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && scores[order[j]] == scores[order[i]]) j++;
    double mean_rank =
        (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; k++) {
      if (labels[order[k]] != 0) {
        positive_rank_sum += mean_rank;
        positives++;
      }
    }
    i = j;
  }
  uint64_t negatives = n - positives;
  if (positives == 0 || negatives == 0) return NAN;
  double p = static_cast<double>(positives);
  return (positive_rank_sum - p * (p + 1) / 2) /
         (p * static_cast<double>(negatives));
}

}  // namespace fabps::examples::ctr
