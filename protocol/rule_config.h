// An update rule's configuration as trainers choose it and pservers apply it
// (pserver/update_rule.h has the arithmetic), its validation, and the one
// table of rule names that every command line, the C API and Python parse.
//
// Thread safety: plain values and pure functions.
#ifndef FABPS_PROTOCOL_RULE_CONFIG_H_
#define FABPS_PROTOCOL_RULE_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace fabps::protocol {

// Numbers are stable (they are written into checkpoints and sent in the
// control plane's InitConfig).
enum class RuleKind : uint32_t {
  kSgd = 0,
  kMomentum = 1,
  kNesterov = 2,
  kAdam = 3,
  kAdaGrad = 4,
};

enum class LrSchedule : uint32_t {
  kConstant = 0,
  // lr goes linearly from learning_rate at t = 1 to final_learning_rate at
  // t = decay_steps, then stays there.
  kLinearDecay = 1,
};

struct UpdateRuleConfig {
  RuleKind kind = RuleKind::kSgd;
  double learning_rate = 0.01;
  LrSchedule schedule = LrSchedule::kConstant;
  double final_learning_rate = 0.0;  // kLinearDecay only
  uint64_t decay_steps = 0;          // kLinearDecay only; >= 1
  double momentum = 0.9;             // kMomentum, kNesterov
  double beta1 = 0.9;                // kAdam
  double beta2 = 0.999;              // kAdam
  double epsilon = 1e-8;             // kAdam, kAdaGrad
  double adagrad_initial = 0.0;      // kAdaGrad: start value of s
  double weight_decay = 0.0;         // 0: off
  double clip_value = 0.0;           // 0: off
  double clip_norm = 0.0;            // 0: off
};

// OK, or InvalidArgument naming the field: finite values, lr >= 0,
// momentum/betas in [0, 1), epsilon > 0 where used, clips and decay >= 0,
// decay_steps >= 1 for kLinearDecay.
Status ValidateRuleConfig(const UpdateRuleConfig& config);

// OK, or InvalidArgument naming parameter `param` unless `lr` is finite and
// >= 0.
Status CheckLearningRateValue(std::string_view param, double lr);
// Whether the learning rate of parameter `param`, whose rule is `rule`, may
// become `lr` while the job runs (PServer.SetLearningRates):
// CheckLearningRateValue's refusal; FailedPrecondition
// naming it when `rule` has the kLinearDecay schedule (the pserver's
// schedule sets each update's rate; a rate set from outside would fight
// it, so the rule keeps its schedule and a job that drives the rate itself
// uses kConstant). The new rate replaces learning_rate and applies from the
// next update of every block of the parameter.
Status CheckNewLearningRate(std::string_view param,
                            const UpdateRuleConfig& rule, double lr);

// Number of state arrays the rule keeps per block (0, 1 or 2): momentum and
// Nesterov keep v, Adam m and s, AdaGrad s.
int StateSlots(RuleKind kind);

// "sgd", "momentum", "nesterov", "adam", "adagrad" ("unknown" for a value
// that is not a RuleKind).
const char* RuleName(RuleKind kind);
// Every rule's name, in RuleKind order (for command-line choices).
const std::vector<std::string>& RuleNames();
// The inverse of RuleName; InvalidArgument "unknown update rule 'x' (one of
// sgd, momentum, nesterov, adam, adagrad)" otherwise.
Result<RuleKind> RuleKindFromName(std::string_view name);

}  // namespace fabps::protocol

#endif  // FABPS_PROTOCOL_RULE_CONFIG_H_
