#include "pserver/checkpointed_model.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "base/log.h"
#include "protocol/model_format.h"
#include "pserver/checkpoint.h"
#include "pserver/file_io.h"
#include "safetensors/safetensors.h"

namespace fabps::pserver {

namespace st = ::fabps::safetensors;
namespace {

// The file's layout, once it has verified completely (the whole file read).
Result<Layout> VerifiedLayout(const std::string& path) {
  std::optional<Layout> layout;
  FABPS_RETURN_IF_ERROR(ReadCheckpoint(
      path,
      [&](const CheckpointHeader& h) {
        layout = h.layout;
        return Status::OK();
      },
      nullptr));
  return std::move(*layout);
}

// Copies the blocks of a verified file into `model`.
Status Gather(const std::string& path, CheckpointedModel* model) {
  const Layout& layout = model->layout;
  auto header = [&](const CheckpointHeader& h) {
    const int64_t ms = static_cast<int64_t>(h.unix_ms);
    if (model->reached_ms == 0 || ms < model->reached_ms)
      model->reached_ms = ms;
    return Status::OK();
  };
  return ReadCheckpoint(path, header, [&](const BlockView& v) -> Status {
    CheckpointedParam& p = model->params[v.info->param];
    const int slots = StateSlots(v.rule);
    model->update_counts[v.info->id] = v.update_count;
    if (IsHashedBlock(*v.info)) {
      if (p.ids.empty()) p.rule = v.rule;
      if (p.rule != v.rule) {
        return Status::Corruption(
            "bucket " + std::to_string(v.info->id) + " holds " +
            RuleName(v.rule) + " state, others of '" +
            layout.params()[v.info->param].name + "' " + RuleName(p.rule));
      }
      p.ids.insert(p.ids.end(), v.ids, v.ids + v.rows);
      p.updated_ms.insert(p.updated_ms.end(), v.updated_ms,
                          v.updated_ms + v.rows);
      p.evicted_ids.insert(p.evicted_ids.end(), v.evicted_ids,
                           v.evicted_ids + v.evicted);
      p.evicted_ms.insert(p.evicted_ms.end(), v.evicted_ms,
                          v.evicted_ms + v.evicted);
      p.values.append(static_cast<const char*>(v.values), v.value_bytes);
      for (int k = 0; k < slots; ++k)
        p.state[k].append(static_cast<const char*>(v.state[k]), v.state_bytes);
      return Status::OK();
    }
    if (p.values.empty()) {
      const ParamSpec& spec = layout.params()[v.info->param];
      p.rule = v.rule;
      p.values.assign(ByteCount(spec), '\0');
      for (int k = 0; k < slots; ++k) p.state[k].assign(p.values.size(), '\0');
    } else if (p.rule != v.rule) {
      return Status::Corruption(
          "block " + std::to_string(v.info->id) + " holds " + RuleName(v.rule) +
          " state, other blocks of '" + layout.params()[v.info->param].name +
          "' " + RuleName(p.rule));
    }
    const size_t offset = v.info->first_element * DTypeSize(v.dtype);
    std::memcpy(p.values.data() + offset, v.values, v.value_bytes);
    for (int k = 0; k < slots; ++k) {
      std::memcpy(p.state[k].data() + offset, v.state[k], v.state_bytes);
    }
    return Status::OK();
  });
}

// Puts a hashed table's rows in ascending id order (the files hold them in
// no particular order), so that an export is the same whatever the
// pserver count and history.
void SortRows(const ParamSpec& spec, CheckpointedParam* p) {
  const size_t n = p->ids.size();
  const size_t row_bytes = RowElements(spec) * DTypeSize(spec.dtype);
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return p->ids[a] < p->ids[b]; });
  auto permute_bytes = [&](std::string* s) {
    if (s->empty()) return;
    std::string out(s->size(), '\0');
    for (size_t i = 0; i < n; ++i)
      std::memcpy(&out[i * row_bytes], s->data() + order[i] * row_bytes,
                  row_bytes);
    s->swap(out);
  };
  permute_bytes(&p->values);
  for (std::string& st : p->state) permute_bytes(&st);
  std::vector<uint64_t> ids(n);
  std::vector<int64_t> ms(n);
  for (size_t i = 0; i < n; ++i) {
    ids[i] = p->ids[order[i]];
    ms[i] = p->updated_ms[order[i]];
  }
  p->ids.swap(ids);
  p->updated_ms.swap(ms);
  // Tombstones by id, then time.
  std::vector<std::pair<uint64_t, int64_t>> gone;
  for (size_t i = 0; i < p->evicted_ids.size(); ++i)
    gone.emplace_back(p->evicted_ids[i], p->evicted_ms[i]);
  std::sort(gone.begin(), gone.end());
  for (size_t i = 0; i < gone.size(); ++i) {
    p->evicted_ids[i] = gone[i].first;
    p->evicted_ms[i] = gone[i].second;
  }
}

// The rows of `p` updated at or after `since` (all rows without one), and
// the distinct ids evicted at or after it.
struct Selected {
  std::vector<uint64_t> ids;
  std::string values, state[2];
  std::vector<uint64_t> evicted;
};
Selected Select(const ParamSpec& spec, const CheckpointedParam& p,
                std::optional<int64_t> since) {
  Selected out;
  const size_t row_bytes = RowElements(spec) * DTypeSize(spec.dtype);
  const int slots = StateSlots(p.rule);
  for (size_t i = 0; i < p.ids.size(); ++i) {
    if (since && p.updated_ms[i] < *since) continue;
    out.ids.push_back(p.ids[i]);
    out.values.append(p.values, i * row_bytes, row_bytes);
    for (int k = 0; k < slots; ++k)
      out.state[k].append(p.state[k], i * row_bytes, row_bytes);
  }
  if (since) {
    for (size_t i = 0; i < p.evicted_ids.size(); ++i) {
      if (p.evicted_ms[i] < *since) continue;
      if (out.evicted.empty() || out.evicted.back() != p.evicted_ids[i])
        out.evicted.push_back(p.evicted_ids[i]);
    }
  }
  return out;
}

// `dir` and its "ps-<i>" subdirectories (where fabps-pserver --store keeps
// pserver i's files).
Result<std::vector<std::string>> WithPserverSubdirs(const std::string& dir) {
  FABPS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
  std::vector<std::string> out = {dir};
  for (const std::string& name : names) {
    if (name.rfind("ps-", 0) != 0) continue;
    struct stat st;
    const std::string sub = dir + "/" + name;
    if (::stat(sub.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      out.push_back(sub);
    }
  }
  return out;
}

}  // namespace

Result<CheckpointedModel> ReadNewestCheckpoints(
    const std::vector<std::string>& dirs) {
  std::map<uint32_t, std::vector<CheckpointInfo>> by_index;  // newest first
  for (const std::string& top : dirs) {
    FABPS_ASSIGN_OR_RETURN(std::vector<std::string> subdirs,
                           WithPserverSubdirs(top));
    for (const std::string& dir : subdirs) {
      FABPS_ASSIGN_OR_RETURN(std::vector<CheckpointInfo> found,
                             ListAllCheckpoints(dir));
      for (CheckpointInfo& info : found) by_index[info.index].push_back(info);
    }
  }
  for (auto& [index, files] : by_index) {
    std::sort(files.begin(), files.end(),
              [](const CheckpointInfo& a, const CheckpointInfo& b) {
                return a.sequence > b.sequence;
              });
  }
  std::string where;
  for (const std::string& d : dirs) where += (where.empty() ? "" : ", ") + d;

  // Shard `index`'s newest file that verifies and, once the layout is
  // known, records it.
  std::optional<Layout> layout;
  auto choose = [&](uint32_t index) -> Result<std::string> {
    auto it = by_index.find(index);
    if (it == by_index.end()) {
      return Status::NotFound("no checkpoint of shard " +
                              std::to_string(index) + " in " + where);
    }
    std::string reasons;
    for (const CheckpointInfo& info : it->second) {
      Result<Layout> l = VerifiedLayout(info.path);
      Status s = l.status();
      if (s.ok() && layout && !l->SameAs(*layout)) {
        s = Status::FailedPrecondition(
            "checkpoint " + info.path + ": another layout than shard 0's (" +
            Layout::DescribeDifference(*l, *layout) + ")");
      }
      if (s.ok()) {
        if (!layout) layout = std::move(*l);
        return info.path;
      }
      FABPS_LOG(WARNING) << "skipping " << s.ToString();
      reasons += (reasons.empty() ? "" : "; ") + s.message();
    }
    return Status::Corruption("no good checkpoint of shard " +
                              std::to_string(index) + ": " + reasons);
  };

  FABPS_ASSIGN_OR_RETURN(std::string first, choose(0));
  const uint32_t n = layout->num_pservers();
  CheckpointedModel model{*layout, {}, {}, {first}};
  for (uint32_t i = 1; i < n; ++i) {
    FABPS_ASSIGN_OR_RETURN(std::string path, choose(i));
    model.files.push_back(std::move(path));
  }
  for (const auto& [index, files] : by_index) {
    if (index >= n) {
      FABPS_LOG(INFO) << "ignoring checkpoints of shard " << index
                      << ": the newest layout has " << n << " pservers";
    }
  }
  model.params.resize(model.layout.params().size());
  model.update_counts.assign(model.layout.num_blocks(), 0);
  for (const std::string& path : model.files) {
    // A file could change between the verification and this read: Gather
    // checks every CRC again and fails rather than mixing.
    FABPS_RETURN_IF_ERROR(Gather(path, &model));
  }
  for (size_t i = 0; i < model.params.size(); ++i) {
    const ParamSpec& spec = model.layout.params()[i];
    if (IsHashed(spec)) SortRows(spec, &model.params[i]);
  }
  return model;
}

Status WriteCheckpointedModel(const CheckpointedModel& model,
                              const std::string& path,
                              const std::string& state_path,
                              const std::string& source,
                              std::optional<int64_t> since_ms) {
  std::vector<st::TensorToWrite> tensors, state;
  std::vector<Selected> selected(model.params.size());  // outlives tensors
  for (size_t i = 0; i < model.params.size(); ++i) {
    const ParamSpec& spec = model.layout.params()[i];
    const CheckpointedParam& p = model.params[i];
    const char* dtype = protocol::SafetensorsDType(spec.dtype);
    std::string name = spec.name;
    std::vector<uint64_t> shape = spec.shape;
    const void* values = p.values.data();
    size_t value_bytes = p.values.size();
    const std::string* states = p.state;
    if (IsHashed(spec)) {
      Selected& s = selected[i];
      s = Select(spec, p, since_ms);
      tensors.push_back({spec.name + protocol::kHashedIdsSuffix,
                         "U64",
                         {s.ids.size()},
                         s.ids.data(),
                         s.ids.size() * 8});
      if (since_ms) {
        tensors.push_back({spec.name + protocol::kHashedEvictedSuffix,
                           "U64",
                           {s.evicted.size()},
                           s.evicted.data(),
                           s.evicted.size() * 8});
      }
      name += protocol::kHashedValuesSuffix;
      shape.insert(shape.begin(), s.ids.size());
      values = s.values.data();
      value_bytes = s.values.size();
      states = s.state;
    }
    tensors.push_back({name, dtype, shape, values, value_bytes});
    const std::vector<std::string> slots =
        protocol::StateTensorSuffixes(p.rule);
    for (size_t k = 0; k < slots.size(); ++k) {
      state.push_back({name + "/" + slots[k], dtype, shape, states[k].data(),
                       states[k].size()});
    }
  }
  st::Metadata meta = protocol::ModelMetadata(source);
  meta["fabps.reached_ms"] = std::to_string(model.reached_ms);
  if (since_ms) meta["fabps.since_ms"] = std::to_string(*since_ms);
  FABPS_RETURN_IF_ERROR(st::WriteFile(path, tensors, meta));
  if (state_path.empty()) return Status::OK();
  return st::WriteFile(state_path, state, meta);
}

}  // namespace fabps::pserver
