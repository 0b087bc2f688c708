#include "trainer/param_init.h"

#include "base/log.h"
#include "pserver/rpc/init_config.h"

namespace fabps::trainer {

namespace ps = rpc::pserver;

Result<bool> ParamInit::Begin(bool selected, Deadline deadline) {
  FABPS_ASSIGN_OR_RETURN(
      bool won, s_.election().Begin(selected, s_.connections(), deadline));
  if (won) {
    params_.clear();
    tables_.clear();
  }
  return won;
}

Status ParamInit::AddTable(const ParamSpec& spec,
                           const protocol::TableConfig& config) {
  if (!protocol::IsHashed(spec)) {
    return Status::InvalidArgument("InitTable: '" + spec.name +
                                   "' is not a hashed table (HashedSpec)");
  }
  FABPS_RETURN_IF_ERROR(
      protocol::CheckParamSpec(spec).WithContext("InitTable"));
  FABPS_RETURN_IF_ERROR(protocol::ValidateTableConfig(config).WithContext(
      "InitTable '" + spec.name + "'"));
  // A hashed table starts without rows: nothing to send but its spec.
  params_.push_back({spec, std::string()});
  tables_[spec.name] = config;
  return Status::OK();
}

Status ParamInit::Add(const ParamSpec& spec, const void* data, size_t bytes) {
  if (protocol::IsHashed(spec)) {
    return Status::InvalidArgument("InitParam: '" + spec.name +
                                   "' is a hashed table (InitTable)");
  }
  FABPS_RETURN_IF_ERROR(
      protocol::CheckParamBuffer(spec, data, bytes, "InitParam"));
  params_.push_back({spec, std::string(static_cast<const char*>(data), bytes)});
  return Status::OK();
}

Status ParamInit::Finish(Deadline deadline) {
  Status s = Send(deadline);
  // Let another trainer (or a later call) take the election over.
  if (!s.ok()) s_.election().Abandon();
  return s;
}

Status ParamInit::Send(Deadline deadline) {
  // Every RPC below starts only before `deadline`.
  auto in_time = [&](const char* what) {
    return deadline.Expired()
               ? Status::TimedOut(std::string("initialization not finished "
                                              "by the deadline (at ") +
                                  what + ")")
               : Status::OK();
  };
  auto& conns = s_.connections();
  const PServerClientOptions& options = s_.options();
  std::vector<ParamSpec> specs;
  for (const auto& p : params_) specs.push_back(p.spec);
  FABPS_ASSIGN_OR_RETURN(Layout built,
                         Layout::Build(specs, options.block_elements,
                                       static_cast<uint32_t>(conns.size())));
  pserver::InitSpec spec{built, options.default_rule, options.rules, tables_};
  ps::InitConfig config = pserver::InitSpecToThrift(spec);
  for (auto& c : conns) {
    FABPS_RETURN_IF_ERROR(in_time("InitParams"));
    Status st = c->Call("InitParams", [&](ps::PServerClient& pc) {
      pc.InitParams(options.trainer_id, config);
    });
    if (st.code() == Status::Code::kAlreadyExists) {
      s_.election().Done();
      return Status::OK();
    }
    FABPS_RETURN_IF_ERROR(st);
  }
  for (const auto& b : built.blocks()) {
    const auto& p = params_[b.param];
    if (protocol::IsHashedBlock(b)) continue;  // buckets start empty
    const size_t esize = DTypeSize(p.spec.dtype);
    std::string values =
        p.values.substr(b.first_element * esize, b.num_elements * esize);
    FABPS_RETURN_IF_ERROR(in_time("InitBlock"));
    FABPS_RETURN_IF_ERROR(
        conns[b.pserver]->Call("InitBlock", [&](ps::PServerClient& pc) {
          pc.InitBlock(options.trainer_id, static_cast<int32_t>(b.id), values);
        }));
  }
  for (auto& c : conns) {
    bool first = false;
    FABPS_RETURN_IF_ERROR(in_time("FinishInitParams"));
    FABPS_RETURN_IF_ERROR(
        c->Call("FinishInitParams", [&](ps::PServerClient& pc) {
          first = pc.FinishInitParams(options.trainer_id);
        }));
    if (!first) {
      FABPS_LOG(INFO) << "pserver " << c->index() << " was already initialized";
    }
  }
  params_.clear();
  tables_.clear();
  s_.election().Done();
  return Status::OK();
}

}  // namespace fabps::trainer
