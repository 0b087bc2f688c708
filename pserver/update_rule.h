// Update rules: how a gradient changes a parameter block, configured per
// parameter.
//
// For one update of a block (its t-th, t = 1, 2, ...; the count is kept per
// block and saved in checkpoints) with received gradient g:
//   1. clip by value:   g = clamp(g, -clip_value, clip_value)   (if > 0)
//   2. clip by norm:    g = g * min(1, clip_norm / ||g||_2)     (if > 0)
//      The norm is over the gradient this block received (after value
//      clipping; for sparse rows, over the summed rows), since one pserver
//      does not see the whole model's gradient.
//   3. weight decay:    g = g + weight_decay * w                (L2 form)
//   4. the rule, with lr = LearningRateAt(config, t):
//      kSgd:      w -= lr * g                       (the v1 "plain add")
//      kMomentum: v = momentum * v + g;  w -= lr * v
//      kNesterov: v = momentum * v + g;  w -= lr * (g + momentum * v)
//      kAdam:     m = b1*m + (1-b1)*g;  s = b2*s + (1-b2)*g*g;
//                 w -= lr * (m / (1-b1^t)) / (sqrt(s / (1-b2^t)) + epsilon)
//      kAdaGrad:  s += g*g;  w -= lr * g / (sqrt(s) + epsilon)
// Arithmetic is done in the parameter's element type; the scalars above are
// rounded to it once per update.
//
// The configuration, its validation and the rule names are the protocol
// library's (protocol/rule_config.h): trainers choose them.
//
// Optimizer state lives next to the values in the shard arena: StateSlots()
// arrays of the same length and type as the values (v; m and s; s), zero at
// start except AdaGrad's s which starts at adagrad_initial.
#ifndef FABPS_PSERVER_UPDATE_RULE_H_
#define FABPS_PSERVER_UPDATE_RULE_H_

#include <cstdint>
#include <string>

#include "base/status.h"
#include "protocol/rule_config.h"
#include "pserver/protocol_types.h"

namespace fabps::pserver {

// Learning rate of the t-th update (t >= 1).
double LearningRateAt(const UpdateRuleConfig& config, uint64_t t);

// Everything a kernel needs for one update, resolved from the config, the
// update count t and the gradient's norm.
struct StepScalars {
  double lr = 0;
  double momentum = 0;
  double beta1 = 0, beta2 = 0, epsilon = 0;
  double inv_bias1 = 1, inv_bias2 = 1;  // 1/(1-b1^t), 1/(1-b2^t)
  double weight_decay = 0;
  double clip_value = 0;  // 0: off
  double grad_scale = 1;  // clip-by-norm factor, 1 when off
};

// `grad_norm` is ||clamp(g)||_2 (only read when clip_norm > 0).
StepScalars PrepareStep(const UpdateRuleConfig& config, uint64_t t,
                        double grad_norm);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_UPDATE_RULE_H_
