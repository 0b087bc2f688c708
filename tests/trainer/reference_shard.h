// Test helper: the store library's answer to "what should the pservers
// hold": one local Shard (pserver/shard.h) over every block of a layout,
// fed what trainers send, for tests that compare real pservers with it.
#ifndef FABPS_TESTS_TRAINER_REFERENCE_SHARD_H_
#define FABPS_TESTS_TRAINER_REFERENCE_SHARD_H_

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pserver/shard.h"
#include "pserver/sparse_rows.h"

namespace fabps::testing {

// An async Shard of every block of `specs` (one pserver) with `rule`, each
// float32 parameter p initialized to init[p] (all of its elements).
inline std::unique_ptr<pserver::Shard> NewReferenceShard(
    const std::vector<protocol::ParamSpec>& specs, uint64_t block_elements,
    const protocol::UpdateRuleConfig& rule,
    const std::vector<std::vector<float>>& init) {
  auto layout = protocol::Layout::Build(specs, block_elements, 1);
  EXPECT_TRUE(layout.ok()) << layout.status().ToString();
  if (!layout.ok()) return nullptr;
  pserver::ShardOptions o;
  o.default_rule = rule;
  o.num_threads = 1;
  auto s = pserver::Shard::Create(*layout, o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return nullptr;
  for (const auto& b : (*s)->layout().blocks()) {
    EXPECT_TRUE((*s)->InitBlock(b.id, init[b.param].data() + b.first_element,
                                b.num_elements * 4)
                    .ok());
  }
  return std::move(*s);
}

// Applies rows ids[i] (values: `dim` floats each, row i's at i * dim) of
// float32 parameter `param` as one sparse-rows gradient per block, ids in
// the order given with repeats left in (the Shard sums them in that order).
inline void ApplyRowsToShard(pserver::Shard* shard, uint32_t param,
                             const std::vector<int64_t>& ids,
                             const std::vector<float>& values, uint64_t dim) {
  std::map<uint32_t, std::pair<std::vector<uint64_t>, std::vector<float>>>
      by_block;
  const uint32_t first = shard->layout().FirstBlockOf(param);
  const uint64_t per = shard->layout().blocks()[first].num_rows;
  for (size_t i = 0; i < ids.size(); i++) {
    auto& [bid, bg] = by_block[first + static_cast<uint32_t>(ids[i] / per)];
    bid.push_back(static_cast<uint64_t>(ids[i]));
    bg.insert(bg.end(), values.begin() + i * dim,
              values.begin() + (i + 1) * dim);
  }
  for (auto& [block, rows] : by_block) {
    std::string bytes =
        protocol::EncodeSparseRows(rows.first, rows.second.data(), dim, 4);
    std::vector<uint64_t> aligned((bytes.size() + 7) / 8);
    std::memcpy(aligned.data(), bytes.data(), bytes.size());
    pserver::GradientRef ref;
    ref.block = block;
    ref.format = pserver::GradientFormat::kSparseRows;
    ref.data = aligned.data();
    ref.bytes = bytes.size();
    Status s = shard->Apply(ref, Deadline::InMs(30000));
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
}

// The values of float32 parameter `param` as the shard holds them.
inline std::vector<float> ParamOfShard(const pserver::Shard& shard,
                                       uint32_t param) {
  const auto& spec = shard.layout().params()[param];
  uint64_t n = 1;
  for (uint64_t d : spec.shape) n *= d;
  std::vector<float> v(n);
  for (const auto& b : shard.layout().blocks()) {
    if (b.param != param) continue;
    EXPECT_TRUE(
        shard.ReadValues(b.id, v.data() + b.first_element, b.num_elements * 4)
            .ok());
  }
  return v;
}

}  // namespace fabps::testing

#endif  // FABPS_TESTS_TRAINER_REFERENCE_SHARD_H_
