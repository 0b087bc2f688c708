#include "trainer/param_init.h"

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "protocol/id_rows.h"
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
                           const protocol::TableConfig& config,
                           const uint64_t* ids, const void* values,
                           uint64_t rows) {
  if (!protocol::IsHashed(spec)) {
    return Status::InvalidArgument("InitTable: '" + spec.name +
                                   "' is not a hashed table (HashedSpec)");
  }
  FABPS_RETURN_IF_ERROR(
      protocol::CheckParamSpec(spec).WithContext("InitTable"));
  FABPS_RETURN_IF_ERROR(protocol::ValidateTableConfig(config).WithContext(
      "InitTable '" + spec.name + "'"));
  const size_t row_bytes = protocol::RowElements(spec) * DTypeSize(spec.dtype);
  if (rows > 0 && (ids == nullptr || values == nullptr)) {
    return Status::InvalidArgument("InitTable '" + spec.name +
                                   "': " + std::to_string(rows) +
                                   " rows without their ids or values");
  }
  std::vector<uint64_t> sorted(ids, ids + rows);
  std::sort(sorted.begin(), sorted.end());
  auto repeated = std::adjacent_find(sorted.begin(), sorted.end());
  if (repeated != sorted.end()) {
    return Status::InvalidArgument("InitTable '" + spec.name + "': id " +
                                   std::to_string(*repeated) +
                                   " is given twice");
  }
  params_.push_back(
      {spec, protocol::EncodeIdRows(ids, values, rows, row_bytes)});
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

Status ParamInit::SendTableRows(const Pending& p, const Layout& layout,
                                Deadline deadline) {
  const size_t row_bytes =
      protocol::RowElements(p.spec) * DTypeSize(p.spec.dtype);
  FABPS_ASSIGN_OR_RETURN(
      protocol::IdRowsView v,
      protocol::ParseIdRows(p.values.data(), p.values.size(), row_bytes));
  FABPS_ASSIGN_OR_RETURN(uint32_t param, layout.FindParam(p.spec.name));
  const uint32_t buckets = p.spec.buckets;
  // Each bucket's rows, in the given order.
  std::vector<std::vector<uint64_t>> of_bucket(buckets);
  for (uint64_t i = 0; i < v.rows; ++i)
    of_bucket[protocol::BucketOfId(v.id(i), buckets)].push_back(i);
  const PServerClientOptions& options = s_.options();
  std::vector<uint64_t> ids;
  std::string values;
  for (uint32_t bucket = 0; bucket < buckets; ++bucket) {
    const protocol::BlockInfo& b =
        layout.blocks()[layout.FirstBlockOf(param) + bucket];
    const std::vector<uint64_t>& rows = of_bucket[bucket];
    if (rows.empty()) continue;  // buckets start empty
    if (rows.size() * (row_bytes + 8) > kMaxBucketInitBytes) {
      return Status::InvalidArgument(
          "InitTable '" + p.spec.name + "': bucket " + std::to_string(bucket) +
          " would start with " + std::to_string(rows.size()) +
          " rows, more than one message carries (" +
          std::to_string(kMaxBucketInitBytes >> 20) +
          " MiB): give the table more buckets");
    }
    ids.resize(rows.size());
    values.resize(rows.size() * row_bytes);
    for (size_t k = 0; k < rows.size(); ++k) {
      ids[k] = v.id(rows[k]);
      std::memcpy(&values[k * row_bytes], v.row(rows[k], row_bytes), row_bytes);
    }
    const std::string bytes = protocol::EncodeIdRows(ids.data(), values.data(),
                                                     rows.size(), row_bytes);
    if (deadline.Expired()) {
      return Status::TimedOut(
          "initialization not finished by the deadline (at InitBlock)");
    }
    FABPS_RETURN_IF_ERROR(s_.connections()[b.pserver]->Call(
        "InitBlock", [&](ps::PServerClient& pc) {
          pc.InitBlock(options.trainer_id, static_cast<int32_t>(b.id), bytes);
        }));
  }
  return Status::OK();
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
  for (const Pending& p : params_) {
    if (protocol::IsHashed(p.spec) && !p.values.empty())
      FABPS_RETURN_IF_ERROR(SendTableRows(p, built, deadline));
  }
  for (const auto& b : built.blocks()) {
    const auto& p = params_[b.param];
    if (protocol::IsHashedBlock(b)) continue;  // sent above
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
