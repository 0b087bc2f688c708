// Shard's hashed-table methods (pserver/shard.h, "Hashed tables").
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "protocol/id_rows.h"
#include "pserver/shard.h"
#include "pserver/shard_blocks.h"
#include "pserver/sparse_rows.h"
#include "pserver/update_kernels.h"

namespace fabps::pserver {
namespace {

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The initial state of a new row: AdaGrad's s starts at adagrad_initial,
// everything else at 0. `scratch` holds one row.
const void* StateFill(const UpdateRuleConfig& rule, DType dtype, size_t r,
                      std::vector<char>* scratch) {
  if (rule.kind != RuleKind::kAdaGrad || rule.adagrad_initial == 0)
    return nullptr;
  scratch->resize(r * DTypeSize(dtype));
  Fill(dtype, scratch->data(), r, rule.adagrad_initial);
  return scratch->data();
}

}  // namespace

template <typename T>
Status Shard::ApplyHashedLocked(Block* b, const GradientRef& g) {
  FABPS_ASSIGN_OR_RETURN(
      SparseRowsView view,
      ParseSparseRows(g.data, g.bytes, *b->info, b->elem_size));
  thread_local std::vector<uint64_t> ids;
  thread_local std::vector<T> summed;
  FABPS_RETURN_IF_ERROR(SumSparseRows<T>(view, *b->info, &ids, &summed));
  Table& t = *b->table;
  const size_t r = b->info->row_elements;
  const UpdateRuleConfig& rule = *b->rule;
  double norm = 0;
  if (rule.clip_norm > 0) {
    for (size_t i = 0; i < ids.size(); ++i)
      norm += ClampedSumSquares(summed.data() + i * r, r, rule.clip_value);
    norm = std::sqrt(norm);
  }
  const uint64_t step = ++b->update_count;
  const StepScalars s = PrepareStep(rule, step, norm);
  const int64_t now = NowUnixMs();
  HashedRows& rows = *b->hashed;
  thread_local std::vector<char> init, fill;
  init.resize(t.row_bytes);
  uint64_t admitted = 0, dropped = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t row = rows.Find(ids[i]);
    if (row < 0) {
      const uint64_t count = t.sketch ? t.sketch->Add(ids[i]) : 1;
      if (!protocol::Admits(t.config, ids[i], count)) {
        dropped++;
        continue;
      }
      protocol::InitialRow(t.config, ids[i], b->dtype, r, init.data());
      row = static_cast<int64_t>(rows.Insert(
          ids[i], init.data(), StateFill(rule, b->dtype, r, &fill)));
      admitted++;
    }
    T* w = reinterpret_cast<T*>(rows.values(row));
    T* s0 = b->slots > 0 ? reinterpret_cast<T*>(rows.state(0, row)) : nullptr;
    T* s1 = b->slots > 1 ? reinterpret_cast<T*>(rows.state(1, row)) : nullptr;
    ApplyRule<T>(rule.kind, s, w, s0, s1, summed.data() + i * r, r);
    rows.Touch(row, now, ++row_version_);
  }
  if (admitted) t.admitted += admitted;
  if (dropped) t.not_admitted += dropped;
  return Status::OK();
}

template Status Shard::ApplyHashedLocked<float>(Block*, const GradientRef&);
template Status Shard::ApplyHashedLocked<double>(Block*, const GradientRef&);

Status Shard::InitHashed(Block* b, const void* values, size_t bytes) {
  const Table& t = *b->table;
  const BlockInfo& info = *b->info;
  const std::string what = "init of bucket " + std::to_string(info.id);
  Result<protocol::IdRowsView> parsed =
      protocol::ParseIdRows(values, bytes, t.row_bytes);
  if (!parsed.ok()) return parsed.status().WithContext(what);
  const protocol::IdRowsView& v = *parsed;
  std::vector<char> fill;
  const void* state_fill =
      StateFill(*b->rule, b->dtype, info.row_elements, &fill);
  const int64_t now = NowUnixMs();
  HashedRows fresh(t.row_bytes, t.slots);
  fresh.Reserve(v.rows);
  for (uint64_t i = 0; i < v.rows; ++i) {
    const uint64_t id = v.id(i);
    if (BucketOfId(id, info.buckets) != info.index_in_param) {
      return Status::InvalidArgument(
          what + ": id " + std::to_string(id) + " is in bucket " +
          std::to_string(BucketOfId(id, info.buckets)) + ", not " +
          std::to_string(info.index_in_param));
    }
    if (fresh.Find(id) >= 0) {
      return Status::InvalidArgument(what + ": id " + std::to_string(id) +
                                     " is given twice");
    }
    const size_t row = fresh.Insert(id, v.row(i, t.row_bytes), state_fill);
    fresh.Touch(row, now, ++row_version_);
  }
  std::lock_guard<std::mutex> lock(b->mu);
  *b->hashed = std::move(fresh);
  b->update_count = 0;
  b->table->admitted += v.rows;
  return Status::OK();
}

Status Shard::GatherHashed(uint32_t block, const uint64_t* ids, uint64_t count,
                           void* out) const {
  FABPS_ASSIGN_OR_RETURN(const Block* b, Find(block));
  if (!b->hashed) {
    return Status::InvalidArgument("block " + std::to_string(block) +
                                   " is not a bucket of a hashed table");
  }
  const Table& t = *b->table;
  const BlockInfo& info = *b->info;
  char* o = static_cast<char*>(out);
  std::lock_guard<std::mutex> lock(b->mu);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t id = ids[i];  // read once: the slot's peer may write
    if (BucketOfId(id, info.buckets) != info.index_in_param) {
      return Status::InvalidArgument(
          "rows read of block " + std::to_string(block) + ": id " +
          std::to_string(id) + " is in bucket " +
          std::to_string(BucketOfId(id, info.buckets)) + ", not " +
          std::to_string(info.index_in_param));
    }
    const int64_t row = b->hashed->Find(id);
    if (row >= 0) {
      std::memcpy(o + i * t.row_bytes,
                  const_cast<HashedRows&>(*b->hashed).values(row), t.row_bytes);
    } else {
      protocol::InitialRow(t.config, id, b->dtype, info.row_elements,
                           o + i * t.row_bytes);
    }
  }
  return Status::OK();
}

Status Shard::RestoreHashed(uint32_t block, uint64_t n, const uint64_t* ids,
                            const int64_t* updated_ms, const void* values,
                            const void* state0, const void* state1,
                            uint64_t update_count, uint64_t evicted,
                            const uint64_t* evicted_ids,
                            const int64_t* evicted_ms) {
  FABPS_ASSIGN_OR_RETURN(const Block* cb, Find(block));
  Block* b = const_cast<Block*>(cb);
  if (!b->hashed) {
    return Status::InvalidArgument("block " + std::to_string(block) +
                                   " is not a bucket of a hashed table");
  }
  const void* state[2] = {state0, state1};
  for (int k = 0; k < b->slots; ++k) {
    if (n > 0 && state[k] == nullptr) {
      return Status::InvalidArgument("restore of bucket " +
                                     std::to_string(block) +
                                     ": missing optimizer state");
    }
  }
  const Table& t = *b->table;
  const BlockInfo& info = *b->info;
  HashedRows fresh(t.row_bytes, t.slots);
  fresh.Reserve(n);
  std::vector<char> st(t.row_bytes * 2);
  for (uint64_t i = 0; i < n; ++i) {
    if (BucketOfId(ids[i], info.buckets) != info.index_in_param ||
        fresh.Find(ids[i]) >= 0) {
      return Status::InvalidArgument(
          "restore of bucket " + std::to_string(block) + ": id " +
          std::to_string(ids[i]) + " is repeated or of another bucket");
    }
    const size_t row = fresh.Insert(
        ids[i], static_cast<const char*>(values) + i * t.row_bytes, nullptr);
    for (int k = 0; k < t.slots; ++k) {
      std::memcpy(fresh.state(k, row),
                  static_cast<const char*>(state[k]) + i * t.row_bytes,
                  t.row_bytes);
    }
    fresh.Touch(row, updated_ms[i], ++row_version_);
  }
  fresh.SetTombstones(std::vector<uint64_t>(evicted_ids, evicted_ids + evicted),
                      std::vector<int64_t>(evicted_ms, evicted_ms + evicted));
  std::lock_guard<std::mutex> lock(b->mu);
  *b->hashed = std::move(fresh);
  b->update_count = update_count;
  return Status::OK();
}

uint64_t Shard::EvictOlder(Block* b, int64_t cutoff, uint64_t limit,
                           int64_t now_ms) {
  std::lock_guard<std::mutex> lock(b->mu);
  HashedRows& rows = *b->hashed;
  uint64_t n = 0;
  for (size_t i = 0; i < rows.size() && n < limit;) {
    if (rows.updated_ms()[i] < cutoff) {
      rows.Evict(i, now_ms);  // the last row moves to i: look at i again
      n++;
    } else {
      i++;
    }
  }
  return n;
}

uint64_t Shard::EvictHashed(int64_t now_ms) {
  uint64_t total = 0;
  for (auto& tp : tables_) {
    if (!tp) continue;
    Table& t = *tp;
    const TableConfig& c = t.config;
    for (Block* b : t.buckets) {
      std::lock_guard<std::mutex> lock(b->mu);
      b->hashed->PruneTombstones(
          now_ms - static_cast<int64_t>(options_.tombstone_retention_ms));
    }
    if (c.ttl_seconds > 0) {
      const int64_t ttl_ms = static_cast<int64_t>(c.ttl_seconds) * 1000;
      uint64_t n = 0;
      for (Block* b : t.buckets)
        n += EvictOlder(b, now_ms - ttl_ms, UINT64_MAX, now_ms);
      t.evicted_ttl += n;
      total += n;
      // Admission counts age with the TTL: an id seen long ago starts over.
      if (t.sketch && now_ms - t.last_halving_ms.load() >= ttl_ms) {
        t.sketch->Halve();
        t.last_halving_ms = now_ms;
      }
    }
    if (c.budget_bytes == 0) continue;
    const uint64_t per_row = HashedRows::BytesPerRow(t.row_bytes, t.slots);
    const uint64_t fixed = t.sketch ? t.sketch->bytes() : 0;
    const uint64_t allowed =
        c.budget_bytes > fixed ? (c.budget_bytes - fixed) / per_row : 0;
    // The update times of every row, to find the cut: the oldest go.
    std::vector<int64_t> stamps;
    for (Block* b : t.buckets) {
      std::lock_guard<std::mutex> lock(b->mu);
      const HashedRows& h = *b->hashed;
      stamps.insert(stamps.end(), h.updated_ms(), h.updated_ms() + h.size());
    }
    if (stamps.size() <= allowed) continue;
    t.over_budget++;
    uint64_t excess = stamps.size() - allowed;
    std::nth_element(stamps.begin(), stamps.begin() + (excess - 1),
                     stamps.end());
    const int64_t cut = stamps[excess - 1];
    // Strictly older first, then rows of exactly the cut's time.
    uint64_t n = 0;
    for (Block* b : t.buckets) n += EvictOlder(b, cut, excess - n, now_ms);
    for (Block* b : t.buckets) {
      if (n >= excess) break;
      n += EvictOlder(b, cut + 1, excess - n, now_ms);
    }
    t.evicted_budget += n;
    total += n;
  }
  return total;
}

std::vector<HashedTableStats> Shard::HashedStats() const {
  std::vector<HashedTableStats> out;
  for (const auto& tp : tables_) {
    if (!tp) continue;
    const Table& t = *tp;
    HashedTableStats st;
    st.name = t.spec->name;
    st.pserver = options_.shard_index;
    for (const Block* b : t.buckets) {
      std::lock_guard<std::mutex> lock(b->mu);
      st.rows += b->hashed->size();
    }
    st.bytes_per_row = HashedRows::BytesPerRow(t.row_bytes, t.slots);
    st.bytes = st.rows * st.bytes_per_row + (t.sketch ? t.sketch->bytes() : 0);
    st.admitted = t.admitted;
    st.evicted_ttl = t.evicted_ttl;
    st.evicted_budget = t.evicted_budget;
    st.not_admitted = t.not_admitted;
    st.over_budget = t.over_budget;
    out.push_back(st);
  }
  return out;
}

}  // namespace fabps::pserver
