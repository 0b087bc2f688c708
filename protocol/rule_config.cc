#include "protocol/rule_config.h"

#include <cmath>

namespace fabps::protocol {
namespace {

constexpr RuleKind kKinds[] = {RuleKind::kSgd, RuleKind::kMomentum,
                               RuleKind::kNesterov, RuleKind::kAdam,
                               RuleKind::kAdaGrad};

}  // namespace

Status ValidateRuleConfig(const UpdateRuleConfig& c) {
  auto bad = [](const char* field, double v) {
    return Status::InvalidArgument("update rule: " + std::string(field) +
                                   " = " + std::to_string(v) +
                                   " is out of range");
  };
  switch (c.kind) {
    case RuleKind::kSgd:
    case RuleKind::kMomentum:
    case RuleKind::kNesterov:
    case RuleKind::kAdam:
    case RuleKind::kAdaGrad:
      break;
    default:
      return Status::InvalidArgument(
          "update rule: unknown kind " +
          std::to_string(static_cast<uint32_t>(c.kind)));
  }
  auto nonneg = [](double v) { return std::isfinite(v) && v >= 0; };
  auto unit = [](double v) { return std::isfinite(v) && v >= 0 && v < 1; };
  if (!nonneg(c.learning_rate)) return bad("learning_rate", c.learning_rate);
  if (!nonneg(c.weight_decay)) return bad("weight_decay", c.weight_decay);
  if (!nonneg(c.clip_value)) return bad("clip_value", c.clip_value);
  if (!nonneg(c.clip_norm)) return bad("clip_norm", c.clip_norm);
  if (c.schedule == LrSchedule::kLinearDecay) {
    if (!nonneg(c.final_learning_rate)) {
      return bad("final_learning_rate", c.final_learning_rate);
    }
    if (c.decay_steps < 1) return bad("decay_steps", 0);
  } else if (c.schedule != LrSchedule::kConstant) {
    return Status::InvalidArgument("update rule: unknown schedule");
  }
  if ((c.kind == RuleKind::kMomentum || c.kind == RuleKind::kNesterov) &&
      !unit(c.momentum)) {
    return bad("momentum", c.momentum);
  }
  if (c.kind == RuleKind::kAdam) {
    if (!unit(c.beta1)) return bad("beta1", c.beta1);
    if (!unit(c.beta2) || c.beta2 == 0) return bad("beta2", c.beta2);
  }
  if (c.kind == RuleKind::kAdam || c.kind == RuleKind::kAdaGrad) {
    if (!std::isfinite(c.epsilon) || c.epsilon <= 0) {
      return bad("epsilon", c.epsilon);
    }
  }
  if (c.kind == RuleKind::kAdaGrad && !nonneg(c.adagrad_initial)) {
    return bad("adagrad_initial", c.adagrad_initial);
  }
  return Status::OK();
}

Status CheckLearningRateValue(std::string_view param, double lr) {
  if (std::isfinite(lr) && lr >= 0) return Status::OK();
  return Status::InvalidArgument("learning rate of '" + std::string(param) +
                                 "': " + std::to_string(lr) +
                                 " is not finite and >= 0");
}

Status CheckNewLearningRate(std::string_view param,
                            const UpdateRuleConfig& rule, double lr) {
  FABPS_RETURN_IF_ERROR(CheckLearningRateValue(param, lr));
  if (rule.schedule == LrSchedule::kLinearDecay) {
    return Status::FailedPrecondition(
        "learning rate of '" + std::string(param) +
        "': its rule has the linear_decay schedule, which sets the rate of "
        "every update; use the constant schedule to set rates from the "
        "trainer");
  }
  return Status::OK();
}

int StateSlots(RuleKind kind) {
  switch (kind) {
    case RuleKind::kSgd:
      return 0;
    case RuleKind::kMomentum:
      return 1;
    case RuleKind::kNesterov:
      return 1;
    case RuleKind::kAdam:
      return 2;
    case RuleKind::kAdaGrad:
      return 1;
  }
  return 0;
}

const char* RuleName(RuleKind kind) {
  switch (kind) {
    case RuleKind::kSgd:
      return "sgd";
    case RuleKind::kMomentum:
      return "momentum";
    case RuleKind::kNesterov:
      return "nesterov";
    case RuleKind::kAdam:
      return "adam";
    case RuleKind::kAdaGrad:
      return "adagrad";
  }
  return "unknown";
}

const std::vector<std::string>& RuleNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (RuleKind k : kKinds) v.push_back(RuleName(k));
    return v;
  }();
  return names;
}

Result<RuleKind> RuleKindFromName(std::string_view name) {
  std::string known;
  for (RuleKind k : kKinds) {
    if (name == RuleName(k)) return k;
    known += std::string(known.empty() ? "" : ", ") + RuleName(k);
  }
  return Status::InvalidArgument("unknown update rule '" + std::string(name) +
                                 "' (one of " + known + ")");
}

}  // namespace fabps::protocol
