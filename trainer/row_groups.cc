#include "trainer/row_groups.h"

#include <algorithm>
#include <limits>
#include <string>

#include "protocol/hashed_table.h"

namespace fabps::trainer {
namespace {

// A hashed table: ids by bucket, each bucket's distinct ids ascending, cut
// into groups of at most the rows one slot carries.
std::vector<RowGroup> GroupHashed(const protocol::Layout& layout,
                                  uint32_t param, const int64_t* ids,
                                  size_t n) {
  const protocol::ParamSpec& spec = layout.params()[param];
  const uint32_t first = layout.FirstBlockOf(param);
  const uint64_t per_slot = layout.blocks()[first].num_rows;
  // (bucket, id, position), sorted: buckets in order, ids ascending,
  // repeats in caller order.
  struct Key {
    uint32_t bucket;
    uint64_t id;
    size_t pos;
  };
  std::vector<Key> keys(n);
  for (size_t i = 0; i < n; i++) {
    const uint64_t id = static_cast<uint64_t>(ids[i]);
    keys[i] = {protocol::BucketOfId(id, spec.buckets), id, i};
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.bucket != b.bucket) return a.bucket < b.bucket;
    if (a.id != b.id) return a.id < b.id;
    return a.pos < b.pos;
  });
  std::vector<RowGroup> groups;
  for (size_t k = 0; k < n; k++) {
    const Key& key = keys[k];
    const bool new_id =
        k == 0 || keys[k - 1].id != key.id || keys[k - 1].bucket != key.bucket;
    if (groups.empty() || groups.back().block != first + key.bucket ||
        (new_id && groups.back().ids.size() == per_slot)) {
      const protocol::BlockInfo& info = layout.blocks()[first + key.bucket];
      RowGroup g;
      g.block = info.id;
      g.pserver = info.pserver;
      groups.push_back(std::move(g));
    }
    RowGroup& g = groups.back();
    if (new_id || g.ids.empty()) g.ids.push_back(key.id);
    g.entries.emplace_back(key.pos, static_cast<uint32_t>(g.ids.size() - 1));
  }
  return groups;
}

}  // namespace

Result<std::vector<RowGroup>> GroupRows(const protocol::Layout& layout,
                                        uint32_t param, const int64_t* ids,
                                        size_t n, bool every_block) {
  const protocol::ParamSpec& spec = layout.params()[param];
  if (protocol::IsHashed(spec)) {
    if (every_block) {
      return Status::FailedPrecondition("hashed table '" + spec.name +
                                        "': sync-mode rows are for dense "
                                        "tables (hashed tables run async)");
    }
    return GroupHashed(layout, param, ids, n);
  }
  const uint64_t rows = spec.shape.empty() ? 1 : spec.shape[0];
  const uint32_t first = layout.FirstBlockOf(param);
  const uint64_t per_block = layout.blocks()[first].num_rows;
  const uint64_t num_blocks = (rows + per_block - 1) / per_block;
  // Counting sort of the positions by block: O(n), caller order kept.
  std::vector<size_t> count(num_blocks + 1, 0);
  for (size_t i = 0; i < n; i++) {
    if (ids[i] < 0 || static_cast<uint64_t>(ids[i]) >= rows) {
      return Status::InvalidArgument("row id " + std::to_string(ids[i]) +
                                     " (position " + std::to_string(i) +
                                     ") of '" + spec.name + "' outside [0, " +
                                     std::to_string(rows) + ")");
    }
    count[static_cast<uint64_t>(ids[i]) / per_block + 1]++;
  }
  for (uint64_t b = 0; b < num_blocks; b++) count[b + 1] += count[b];
  std::vector<size_t> order(n);
  {
    std::vector<size_t> next(count.begin(), count.end() - 1);
    for (size_t i = 0; i < n; i++)
      order[next[static_cast<uint64_t>(ids[i]) / per_block]++] = i;
  }
  std::vector<RowGroup> groups;
  constexpr uint32_t kUnseen = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> index_of(per_block, kUnseen);  // by row in block
  for (uint64_t b = 0; b < num_blocks; b++) {
    if (count[b] == count[b + 1] && !every_block) continue;
    const protocol::BlockInfo& info = layout.blocks()[first + b];
    RowGroup g;
    g.block = info.id;
    g.pserver = info.pserver;
    g.entries.reserve(count[b + 1] - count[b]);
    for (size_t k = count[b]; k < count[b + 1]; k++) {
      const size_t pos = order[k];
      const uint64_t row = static_cast<uint64_t>(ids[pos]);
      uint32_t& idx = index_of[row - info.first_row];
      if (idx == kUnseen) {
        idx = static_cast<uint32_t>(g.ids.size());
        g.ids.push_back(row);
      }
      g.entries.emplace_back(pos, idx);
    }
    // Ascending ids: the pserver then has nothing to sort, and walks the
    // block's rows in memory order. Many rows of the block: a scan of the
    // marks is cheaper than a sort.
    std::vector<uint64_t> sorted;
    if (g.ids.size() * 16 >= info.num_rows) {
      sorted.reserve(g.ids.size());
      for (uint64_t local = 0; local < info.num_rows; local++)
        if (index_of[local] != kUnseen)
          sorted.push_back(info.first_row + local);
    } else {
      sorted = g.ids;
      std::sort(sorted.begin(), sorted.end());
    }
    std::vector<uint32_t> rank_of(g.ids.size());  // by first-seen index
    for (uint32_t rank = 0; rank < sorted.size(); rank++) {
      uint32_t& idx = index_of[sorted[rank] - info.first_row];
      rank_of[idx] = rank;
      idx = kUnseen;
    }
    for (auto& entry : g.entries) entry.second = rank_of[entry.second];
    g.ids = std::move(sorted);
    groups.push_back(std::move(g));
  }
  return groups;
}

}  // namespace fabps::trainer
