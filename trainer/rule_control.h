// RuleControl: the part of PServerClient that changes the pservers' update
// rules while the job runs and reads them back (see PServerClient for the
// contracts the caller sees): learning rates by PServer.SetLearningRates on
// every pserver, the rules from pserver 0's InitConfig, which every
// pserver keeps with the latest rates (thrift/pserver.thrift).
//
// Every call expects Prepare to have succeeded on the session (the caller
// prepares once) and notes its own failures on it.
//
// Thread safety: none; PServerClient serializes.
#ifndef FABPS_TRAINER_RULE_CONTROL_H_
#define FABPS_TRAINER_RULE_CONTROL_H_

#include <map>
#include <string>

#include "base/deadline.h"
#include "base/status.h"
#include "trainer/pserver_session.h"

namespace fabps::trainer {

class RuleControl {
 public:
  explicit RuleControl(PServerSession* session) : s_(*session) {}

  // Checks every name against the layout and every rate's value, then sets
  // the rates on pserver 0, 1, ... in turn; the first refusal or failure
  // stops it (the pservers before it have the new rates: the call is
  // idempotent, so the caller sends the same rates again).
  Status SetLearningRates(const std::map<std::string, double>& rates,
                          Deadline deadline);
  // Every parameter's rule (by name) as pserver 0 applies it now.
  Result<std::map<std::string, UpdateRuleConfig>> Rules(Deadline deadline);

 private:
  PServerSession& s_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_RULE_CONTROL_H_
