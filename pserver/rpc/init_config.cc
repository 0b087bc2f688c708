#include "pserver/rpc/init_config.h"

#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <cstring>

#include "base/crc32c.h"
#include "base/file_util.h"
#include "base/little_endian.h"

namespace fabps::pserver {

using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::transport::TMemoryBuffer;

rpc::pserver::UpdateRule RuleToThrift(const UpdateRuleConfig& c) {
  rpc::pserver::UpdateRule t;
  t.kind = static_cast<int32_t>(c.kind);
  t.learning_rate = c.learning_rate;
  t.schedule = static_cast<int32_t>(c.schedule);
  t.final_learning_rate = c.final_learning_rate;
  t.decay_steps = static_cast<int64_t>(c.decay_steps);
  t.momentum = c.momentum;
  t.beta1 = c.beta1;
  t.beta2 = c.beta2;
  t.epsilon = c.epsilon;
  t.adagrad_initial = c.adagrad_initial;
  t.weight_decay = c.weight_decay;
  t.clip_value = c.clip_value;
  t.clip_norm = c.clip_norm;
  return t;
}

Result<UpdateRuleConfig> RuleFromThrift(const rpc::pserver::UpdateRule& t) {
  if (t.kind < 0 || t.kind > static_cast<int32_t>(RuleKind::kAdaGrad)) {
    return Status::InvalidArgument("update rule kind " +
                                   std::to_string(t.kind) + " (0..4)");
  }
  if (t.schedule < 0 ||
      t.schedule > static_cast<int32_t>(LrSchedule::kLinearDecay)) {
    return Status::InvalidArgument("learning-rate schedule " +
                                   std::to_string(t.schedule));
  }
  if (t.decay_steps < 0) return Status::InvalidArgument("decay_steps < 0");
  UpdateRuleConfig c;
  c.kind = static_cast<RuleKind>(t.kind);
  c.learning_rate = t.learning_rate;
  c.schedule = static_cast<LrSchedule>(t.schedule);
  c.final_learning_rate = t.final_learning_rate;
  c.decay_steps = static_cast<uint64_t>(t.decay_steps);
  c.momentum = t.momentum;
  c.beta1 = t.beta1;
  c.beta2 = t.beta2;
  c.epsilon = t.epsilon;
  c.adagrad_initial = t.adagrad_initial;
  c.weight_decay = t.weight_decay;
  c.clip_value = t.clip_value;
  c.clip_norm = t.clip_norm;
  FABPS_RETURN_IF_ERROR(ValidateRuleConfig(c));
  return c;
}

rpc::pserver::HashedTable TableToThrift(const TableConfig& c) {
  rpc::pserver::HashedTable t;
  t.init = static_cast<int32_t>(c.init);
  t.init_scale = c.init_scale;
  t.seed = static_cast<int64_t>(c.seed);
  t.admit_after = static_cast<int32_t>(c.admit_after);
  t.admit_probability = c.admit_probability;
  t.ttl_seconds = static_cast<int64_t>(c.ttl_seconds);
  t.budget_bytes = static_cast<int64_t>(c.budget_bytes);
  return t;
}

Result<TableConfig> TableFromThrift(const rpc::pserver::HashedTable& t) {
  if (t.init < 0 || t.admit_after < 0 || t.ttl_seconds < 0 ||
      t.budget_bytes < 0) {
    return Status::InvalidArgument(
        "table: init, admit_after, ttl_seconds and budget_bytes must be >= 0");
  }
  TableConfig c;
  c.init = static_cast<protocol::RowInit>(t.init);
  c.init_scale = t.init_scale;
  c.seed = static_cast<uint64_t>(t.seed);
  c.admit_after = static_cast<uint32_t>(t.admit_after);
  c.admit_probability = t.admit_probability;
  c.ttl_seconds = static_cast<uint64_t>(t.ttl_seconds);
  c.budget_bytes = static_cast<uint64_t>(t.budget_bytes);
  FABPS_RETURN_IF_ERROR(protocol::ValidateTableConfig(c));
  return c;
}

rpc::pserver::InitConfig InitSpecToThrift(const InitSpec& spec) {
  rpc::pserver::InitConfig t;
  t.layout = spec.layout.Encode();
  t.default_rule = RuleToThrift(spec.default_rule);
  for (const auto& [name, rule] : spec.rules)
    t.rules[name] = RuleToThrift(rule);
  for (const auto& [name, table] : spec.tables)
    t.tables[name] = TableToThrift(table);
  return t;
}

Result<InitSpec> InitSpecFromThrift(const rpc::pserver::InitConfig& config) {
  auto layout = Layout::Decode(config.layout.data(), config.layout.size());
  if (!layout.ok()) return layout.status().WithContext("init config layout");
  FABPS_ASSIGN_OR_RETURN(UpdateRuleConfig def,
                         RuleFromThrift(config.default_rule));
  InitSpec spec{std::move(layout).value(), def, {}, {}};
  for (const auto& [name, rule] : config.rules) {
    if (!spec.layout.FindParam(name).ok()) {
      return Status::InvalidArgument("update rule for unknown parameter '" +
                                     name + "'");
    }
    auto r = RuleFromThrift(rule);
    if (!r.ok()) return r.status().WithContext("rule of '" + name + "'");
    spec.rules[name] = r.value();
  }
  for (const auto& [name, table] : config.tables) {
    auto p = spec.layout.FindParam(name);
    if (!p.ok() || !IsHashed(spec.layout.params()[*p])) {
      return Status::InvalidArgument("table configuration for '" + name +
                                     "', which is not a hashed table");
    }
    auto c = TableFromThrift(table);
    if (!c.ok()) return c.status().WithContext("table '" + name + "'");
    spec.tables[name] = *c;
  }
  return spec;
}

namespace {
constexpr char kMagic[8] = {'F', 'A', 'B', 'P', 'S', 'I', 'C', '1'};
constexpr size_t kMaxConfigBytes = size_t{256} << 20;
}  // namespace

Status WriteInitConfigFile(const std::string& path,
                           const rpc::pserver::InitConfig& config) {
  auto buf = std::make_shared<TMemoryBuffer>();
  TBinaryProtocol proto(buf);
  config.write(&proto);
  std::string body = buf->getBufferAsString();
  std::string out(kMagic, sizeof(kMagic));
  ByteWriter w(&out);
  w.U32(static_cast<uint32_t>(body.size()));
  w.Raw(body.data(), body.size());
  w.U32(crc32c::Value(out.data(), out.size()));
  return WriteFileAtomically(path, out);
}

Result<rpc::pserver::InitConfig> ReadInitConfigFile(const std::string& path) {
  auto read = ReadWholeFile(path, kMaxConfigBytes + 16);
  if (!read.ok()) return read.status();
  std::string data = std::move(read).value();
  if (data.size() < sizeof(kMagic) + 8)
    return Status::Corruption(path + ": truncated init config");
  if (std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::Corruption(path + ": bad magic");
  }
  uint32_t len = LoadU32(data.data() + 8);
  if (len > kMaxConfigBytes || data.size() != sizeof(kMagic) + 4 + len + 4) {
    return Status::Corruption(path +
                              ": length field does not match the file size");
  }
  uint32_t crc = LoadU32(data.data() + data.size() - 4);
  if (crc != crc32c::Value(data.data(), data.size() - 4)) {
    return Status::Corruption(path + ": CRC mismatch");
  }
  rpc::pserver::InitConfig config;
  try {
    auto buf = std::make_shared<TMemoryBuffer>(
        reinterpret_cast<uint8_t*>(data.data() + 12), len, TMemoryBuffer::COPY);
    TBinaryProtocol proto(buf);
    config.read(&proto);
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": " + e.what());
  }
  return config;
}

}  // namespace fabps::pserver
