#include "trainer/rule_control.h"

#include "pserver/rpc/init_config.h"
#include "trainer/pserver_connection.h"

namespace fabps::trainer {

namespace ps = rpc::pserver;

Status RuleControl::SetLearningRates(const std::map<std::string, double>& rates,
                                     Deadline deadline) {
  // A caller's mistake is refused before any pserver changes.
  for (const auto& [name, lr] : rates) {
    FABPS_RETURN_IF_ERROR(s_.layout().FindParam(name).status());
    FABPS_RETURN_IF_ERROR(protocol::CheckLearningRateValue(name, lr));
  }
  for (auto& c : s_.connections()) {
    FABPS_RETURN_IF_ERROR(s_.Note(
        c->Call("SetLearningRates", deadline, [&](ps::PServerClient& pc) {
          pc.SetLearningRates(s_.options().trainer_id, rates);
        })));
  }
  return Status::OK();
}

Result<std::map<std::string, UpdateRuleConfig>> RuleControl::Rules(
    Deadline deadline) {
  ps::InitConfig config;
  FABPS_RETURN_IF_ERROR(s_.Note(s_.connections()[0]->Call(
      "GetInitConfig", deadline,
      [&](ps::PServerClient& pc) { pc.GetInitConfig(config); })));
  FABPS_ASSIGN_OR_RETURN(pserver::InitSpec spec,
                         pserver::InitSpecFromThrift(config));
  std::map<std::string, UpdateRuleConfig> rules;
  for (const ParamSpec& p : spec.layout.params()) {
    auto it = spec.rules.find(p.name);
    rules[p.name] = it == spec.rules.end() ? spec.default_rule : it->second;
  }
  return rules;
}

}  // namespace fabps::trainer
