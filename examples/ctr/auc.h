// The area under the ROC curve of scores against 0/1 labels: the
// probability that a random positive scores above a random negative (ties
// count one half), computed from ranks in O(n log n). What the CTR trainer
// reports per pass and fabps-ctr-gen reports for the planted model, so the
// two numbers are computed the same way.
#ifndef FABPS_EXAMPLES_CTR_AUC_H_
#define FABPS_EXAMPLES_CTR_AUC_H_

#include <vector>

namespace fabps::examples::ctr {

// `scores` and `labels` have the same size. NaN when either class is
// missing.
double Auc(const std::vector<double>& scores, const std::vector<int>& labels);

}  // namespace fabps::examples::ctr

#endif  // FABPS_EXAMPLES_CTR_AUC_H_
