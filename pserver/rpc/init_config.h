// Conversions between the pserver library's types and the control plane's
// Thrift types (thrift/pserver.thrift), and the InitConfig file a pserver
// keeps beside its checkpoints so that it can come back after a restart.
#ifndef FABPS_PSERVER_RPC_INIT_CONFIG_H_
#define FABPS_PSERVER_RPC_INIT_CONFIG_H_

#include <map>
#include <string>

#include "base/status.h"
#include "protocol/rule_config.h"
#include "pserver/protocol_types.h"
#include "thrift_gen/pserver/pserver_types.h"

namespace fabps::pserver {

rpc::pserver::UpdateRule RuleToThrift(const UpdateRuleConfig& c);
// Validates (ValidateRuleConfig) after converting; InvalidArgument on bad
// values, which come from a peer.
Result<UpdateRuleConfig> RuleFromThrift(const rpc::pserver::UpdateRule& t);

rpc::pserver::HashedTable TableToThrift(const TableConfig& c);
// Validates (ValidateTableConfig) after converting.
Result<TableConfig> TableFromThrift(const rpc::pserver::HashedTable& t);

// The decoded, validated form of rpc::pserver::InitConfig.
struct InitSpec {
  Layout layout;
  UpdateRuleConfig default_rule;
  std::map<std::string, UpdateRuleConfig> rules;
  std::map<std::string, TableConfig> tables;  // hashed tables by name
};
rpc::pserver::InitConfig InitSpecToThrift(const InitSpec& spec);
// Decodes the layout (Layout::Decode validates it), every rule and table;
// rules for parameters the layout does not have, and tables for parameters
// that are not hashed tables, are refused.
Result<InitSpec> InitSpecFromThrift(const rpc::pserver::InitConfig& config);

// The file: "FABPSIC1", u32 length, Thrift binary InitConfig, u32 CRC32C of
// everything before it. Written to a temporary name, fsynced, renamed.
Status WriteInitConfigFile(const std::string& path,
                           const rpc::pserver::InitConfig& config);
// NotFound when absent; Corruption naming the file and the check otherwise.
Result<rpc::pserver::InitConfig> ReadInitConfigFile(const std::string& path);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_RPC_INIT_CONFIG_H_
