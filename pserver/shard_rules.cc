// Shard's learning rates set while the job runs (pserver/shard.h): checked
// all first, then each parameter's rule changed under the locks of all its
// owned blocks.
#include <mutex>
#include <vector>

#include "pserver/shard.h"
#include "pserver/shard_blocks.h"

namespace fabps::pserver {

Status Shard::CheckLearningRates(
    const std::map<std::string, double>& rates) const {
  std::lock_guard<std::mutex> r(rules_mu_);
  for (const auto& [name, lr] : rates) {
    FABPS_ASSIGN_OR_RETURN(uint32_t p, layout_.FindParam(name));
    FABPS_RETURN_IF_ERROR(
        protocol::CheckNewLearningRate(name, rule_of_param_[p], lr));
  }
  return Status::OK();
}

Status Shard::SetLearningRates(const std::map<std::string, double>& rates) {
  FABPS_RETURN_IF_ERROR(CheckLearningRates(rates));
  std::lock_guard<std::mutex> r(rules_mu_);
  for (const auto& [name, lr] : rates) {
    const uint32_t p = *layout_.FindParam(name);
    // Ascending block order, one parameter at a time: applies hold one
    // block's lock at a time, so this cannot deadlock with them.
    std::vector<std::unique_lock<std::mutex>> locks;
    for (const auto& b : blocks_) {
      if (b->info->param == p) locks.emplace_back(b->mu);
    }
    rule_of_param_[p].learning_rate = lr;
  }
  return Status::OK();
}

UpdateRuleConfig Shard::RuleOf(uint32_t param) const {
  std::lock_guard<std::mutex> r(rules_mu_);
  return rule_of_param_.at(param);
}

}  // namespace fabps::pserver
