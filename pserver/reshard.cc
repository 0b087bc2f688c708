#include "pserver/reshard.h"

#include <utility>

#include "pserver/file_io.h"

namespace fabps::pserver {
namespace {

const UpdateRuleConfig& RuleOf(const ShardOptions& rules,
                               const std::string& name) {
  auto it = rules.rules.find(name);
  return it == rules.rules.end() ? rules.default_rule : it->second;
}

// Restores bucket `b` of a hashed table from the table's rows in `p`: the
// rows whose ids fall in it (the bucket count is the layout's, whatever the
// pserver count).
Status RestoreBucket(const CheckpointedParam& p, const BlockInfo& b,
                     uint64_t update_count, Shard* shard) {
  const size_t row_bytes = p.ids.empty() ? 0 : p.values.size() / p.ids.size();
  std::vector<uint64_t> ids;
  std::vector<int64_t> ms;
  std::string values, state[2];
  const int slots = StateSlots(p.rule);
  for (size_t i = 0; i < p.ids.size(); ++i) {
    if (BucketOfId(p.ids[i], b.buckets) != b.index_in_param) continue;
    ids.push_back(p.ids[i]);
    ms.push_back(p.updated_ms[i]);
    values.append(p.values, i * row_bytes, row_bytes);
    for (int k = 0; k < slots; ++k)
      state[k].append(p.state[k], i * row_bytes, row_bytes);
  }
  std::vector<uint64_t> gone;
  std::vector<int64_t> gone_ms;
  for (size_t i = 0; i < p.evicted_ids.size(); ++i) {
    if (BucketOfId(p.evicted_ids[i], b.buckets) != b.index_in_param) continue;
    gone.push_back(p.evicted_ids[i]);
    gone_ms.push_back(p.evicted_ms[i]);
  }
  return shard->RestoreHashed(
      b.id, ids.size(), ids.data(), ms.data(), values.data(), state[0].data(),
      state[1].data(), update_count, gone.size(), gone.data(), gone_ms.data());
}

// A shard of `layout` holding index `index`'s blocks, restored from `model`.
Result<std::unique_ptr<Shard>> RestoredShard(const CheckpointedModel& model,
                                             const Layout& layout,
                                             uint32_t index,
                                             const ShardOptions& rules) {
  ShardOptions so;
  so.shard_index = index;
  so.default_rule = rules.default_rule;
  so.rules = rules.rules;
  so.tables = rules.tables;
  so.num_threads = 1;  // nothing is applied: no arena of threads needed
  FABPS_ASSIGN_OR_RETURN(std::unique_ptr<Shard> shard,
                         Shard::Create(layout, so));
  for (uint32_t id : shard->block_ids()) {
    const BlockInfo& b = layout.blocks()[id];
    const CheckpointedParam& p = model.params[b.param];
    if (IsHashedBlock(b)) {
      FABPS_RETURN_IF_ERROR(
          RestoreBucket(p, b, model.update_counts[id], shard.get()));
      continue;
    }
    const size_t size = DTypeSize(layout.params()[b.param].dtype);
    const size_t offset = b.first_element * size;
    const char* state[2] = {nullptr, nullptr};
    for (int k = 0; k < StateSlots(p.rule); ++k) {
      state[k] = p.state[k].data() + offset;
    }
    FABPS_RETURN_IF_ERROR(shard->RestoreBlock(id, p.values.data() + offset,
                                              state[0], state[1],
                                              model.update_counts[id]));
  }
  return shard;
}

}  // namespace

Result<Layout> LayoutFor(const Layout& layout, uint32_t new_count) {
  return Layout::Build(layout.params(), layout.block_elements(), new_count);
}

Result<std::vector<CheckpointInfo>> WriteReshardedCheckpoints(
    const CheckpointedModel& model, uint32_t new_count,
    const ShardOptions& rules, const std::vector<std::string>& dirs) {
  if (dirs.size() != new_count) {
    return Status::InvalidArgument(
        "re-sharding for " + std::to_string(new_count) + " pservers needs " +
        std::to_string(new_count) + " directories, got " +
        std::to_string(dirs.size()));
  }
  const Layout& old_layout = model.layout;
  if (model.params.size() != old_layout.params().size() ||
      model.update_counts.size() != old_layout.num_blocks()) {
    return Status::InvalidArgument("re-sharding: the model is incomplete");
  }
  for (size_t i = 0; i < model.params.size(); ++i) {
    const std::string& name = old_layout.params()[i].name;
    const CheckpointedParam& p = model.params[i];
    if (IsHashed(old_layout.params()[i]) && p.ids.empty()) continue;
    const RuleKind want = RuleOf(rules, name).kind;
    if (want != p.rule) {
      return Status::FailedPrecondition(
          "re-sharding: parameter '" + name + "' has " + RuleName(p.rule) +
          " state in the checkpoints, the job's rule is " + RuleName(want));
    }
    for (int k = 0; k < StateSlots(p.rule); ++k) {
      if (p.state[k].size() != p.values.size()) {
        return Status::InvalidArgument("re-sharding: parameter '" + name +
                                       "' lacks optimizer state");
      }
    }
  }
  FABPS_ASSIGN_OR_RETURN(Layout layout, LayoutFor(old_layout, new_count));
  std::vector<CheckpointInfo> written;
  Status failed;
  for (uint32_t j = 0; j < new_count && failed.ok(); ++j) {
    Result<std::unique_ptr<Shard>> shard =
        RestoredShard(model, layout, j, rules);
    if (!shard.ok()) {
      failed = shard.status();
      break;
    }
    Result<std::vector<CheckpointInfo>> existing = ListCheckpoints(dirs[j], j);
    if (!existing.ok()) {
      failed = existing.status();
      break;
    }
    const uint64_t next =
        existing->empty() ? 1 : existing->front().sequence + 1;
    Result<CheckpointInfo> info = WriteCheckpoint(**shard, dirs[j], next);
    if (!info.ok()) {
      failed = info.status();
      break;
    }
    written.push_back(std::move(*info));
  }
  if (!failed.ok()) {
    // Leave no half-done re-shard behind: the old files are newest again.
    for (const CheckpointInfo& info : written) RemoveFile(info.path);
    return failed;
  }
  return written;
}

}  // namespace fabps::pserver
