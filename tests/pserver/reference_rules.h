// A deliberately plain reference of the update rules in update_rule.h,
// written from the formulas (in double, element by element) and sharing no
// code with the kernels, to check them step by step.
#ifndef FABPS_TESTS_PSERVER_REFERENCE_RULES_H_
#define FABPS_TESTS_PSERVER_REFERENCE_RULES_H_

#include <algorithm>
#include <cmath>
#include <vector>

#include "pserver/update_rule.h"

namespace fabps::pserver::testing {

class ReferenceRule {
 public:
  ReferenceRule(const UpdateRuleConfig& c, std::vector<double> w)
      : c_(c), w_(std::move(w)), a_(w_.size(), 0.0), b_(w_.size(), 0.0) {
    if (c.kind == RuleKind::kAdaGrad) {
      std::fill(a_.begin(), a_.end(), c.adagrad_initial);
    }
  }

  // One dense update.
  void Step(std::vector<double> g) {
    std::vector<size_t> all(w_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    StepElements(all, std::move(g));
  }

  // One update of the listed elements only (sparse rows, lazily).
  void StepElements(const std::vector<size_t>& idx, std::vector<double> g) {
    ++t_;
    if (c_.clip_value > 0) {
      for (double& x : g)
        x = std::max(-c_.clip_value, std::min(c_.clip_value, x));
    }
    if (c_.clip_norm > 0) {
      double sq = 0;
      for (double x : g) sq += x * x;
      double norm = std::sqrt(sq);
      if (norm > c_.clip_norm) {
        for (double& x : g) x *= c_.clip_norm / norm;
      }
    }
    double lr = c_.learning_rate;
    if (c_.schedule == LrSchedule::kLinearDecay) {
      if (t_ >= c_.decay_steps) {
        lr = c_.final_learning_rate;
      } else {
        double frac = double(t_ - 1) / double(c_.decay_steps - 1);
        lr = c_.learning_rate * (1 - frac) + c_.final_learning_rate * frac;
      }
    }
    for (size_t k = 0; k < idx.size(); ++k) {
      size_t i = idx[k];
      double gi = g[k] + c_.weight_decay * w_[i];
      switch (c_.kind) {
        case RuleKind::kSgd:
          w_[i] = w_[i] - lr * gi;
          break;
        case RuleKind::kMomentum:
          a_[i] = c_.momentum * a_[i] + gi;
          w_[i] = w_[i] - lr * a_[i];
          break;
        case RuleKind::kNesterov:
          a_[i] = c_.momentum * a_[i] + gi;
          w_[i] = w_[i] - lr * (gi + c_.momentum * a_[i]);
          break;
        case RuleKind::kAdam: {
          a_[i] = c_.beta1 * a_[i] + (1 - c_.beta1) * gi;
          b_[i] = c_.beta2 * b_[i] + (1 - c_.beta2) * gi * gi;
          double mhat = a_[i] / (1 - std::pow(c_.beta1, double(t_)));
          double vhat = b_[i] / (1 - std::pow(c_.beta2, double(t_)));
          w_[i] = w_[i] - lr * mhat / (std::sqrt(vhat) + c_.epsilon);
          break;
        }
        case RuleKind::kAdaGrad:
          a_[i] = a_[i] + gi * gi;
          w_[i] = w_[i] - lr * gi / (std::sqrt(a_[i]) + c_.epsilon);
          break;
      }
    }
  }

  const std::vector<double>& w() const { return w_; }
  uint64_t t() const { return t_; }

 private:
  UpdateRuleConfig c_;
  std::vector<double> w_, a_, b_;
  uint64_t t_ = 0;
};

}  // namespace fabps::pserver::testing

#endif  // FABPS_TESTS_PSERVER_REFERENCE_RULES_H_
