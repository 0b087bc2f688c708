#include "pserver/update_rule.h"

#include <cmath>

namespace fabps::pserver {

double LearningRateAt(const UpdateRuleConfig& c, uint64_t t) {
  if (c.schedule != LrSchedule::kLinearDecay || c.decay_steps <= 1) {
    return c.schedule == LrSchedule::kLinearDecay ? c.final_learning_rate
                                                  : c.learning_rate;
  }
  if (t >= c.decay_steps) return c.final_learning_rate;
  if (t < 1) t = 1;
  double frac =
      static_cast<double>(t - 1) / static_cast<double>(c.decay_steps - 1);
  return c.learning_rate + (c.final_learning_rate - c.learning_rate) * frac;
}

StepScalars PrepareStep(const UpdateRuleConfig& c, uint64_t t,
                        double grad_norm) {
  StepScalars s;
  s.lr = LearningRateAt(c, t);
  s.momentum = c.momentum;
  s.beta1 = c.beta1;
  s.beta2 = c.beta2;
  s.epsilon = c.epsilon;
  if (c.kind == RuleKind::kAdam) {
    double td = static_cast<double>(t);
    s.inv_bias1 = 1.0 / (1.0 - std::pow(c.beta1, td));
    s.inv_bias2 = 1.0 / (1.0 - std::pow(c.beta2, td));
  }
  s.weight_decay = c.weight_decay;
  s.clip_value = c.clip_value;
  if (c.clip_norm > 0 && grad_norm > c.clip_norm) {
    s.grad_scale = c.clip_norm / grad_norm;
  }
  return s;
}

}  // namespace fabps::pserver
