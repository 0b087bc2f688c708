// The shard the checkpoint fuzzer loads into and the seed generator saves
// from: three small parameters, one per optimizer-state count (Adam keeps
// two arrays, momentum one, SGD none), float32 and float64, cut into blocks
// of 16 elements, shard 0 of 2.
#ifndef FABPS_FUZZ_CHECKPOINT_SHARD_H_
#define FABPS_FUZZ_CHECKPOINT_SHARD_H_

#include <memory>
#include <string>

#include "fuzz/fuzz_util.h"
#include "pserver/shard.h"

namespace fabps::fuzz {

inline std::unique_ptr<pserver::Shard> MakeCheckpointShard() {
  using protocol::DType;
  using protocol::RuleKind;
  auto layout = protocol::Layout::Build({{"a", DType::kFloat32, {40}},
                                         {"b", DType::kFloat64, {3, 5}},
                                         {"c", DType::kFloat32, {7}},
                                         {"d", DType::kFloat32, {2, 9}}},
                                        16, 2);
  FABPS_FUZZ_CHECK(layout.ok());
  pserver::ShardOptions o;
  o.shard_index = 0;
  o.num_threads = 1;
  o.default_rule.kind = RuleKind::kSgd;
  o.default_rule.learning_rate = 0.1;
  o.rules["a"] = o.default_rule;
  o.rules["a"].kind = RuleKind::kAdam;
  o.rules["b"] = o.default_rule;
  o.rules["b"].kind = RuleKind::kMomentum;
  o.rules["b"].momentum = 0.9;
  auto shard = pserver::Shard::Create(std::move(layout).value(), o);
  FABPS_FUZZ_CHECK(shard.ok());
  return std::move(shard).value();
}

// False when Layout::Build would cut more than `limit` blocks from the
// parameters in Layout::Encode bytes `l` (layout.h: rows of a parameter are
// its first dimension, max(1, block_elements / row elements) rows a block).
// Cheap: no block table. Bytes that do not parse count as small, since
// Decode rejects them before building anything.
inline bool LayoutBlocksAtMost(const std::string& l, uint64_t limit) {
  size_t at = 16;  // magic, version, N
  if (l.size() < at + 12) return true;
  uint64_t block_elements = Load64(l, at);
  uint32_t params = Load32(l, at + 8);
  at += 12;
  uint64_t blocks = 0;
  for (uint32_t p = 0; p < params; ++p) {
    if (l.size() - at < 4) return true;
    uint64_t name = Load32(l, at);
    if (l.size() - at - 4 < name + 8) return true;
    at += 4 + name + 4;
    uint32_t rank = Load32(l, at);
    at += 4;
    if (rank > 8 || l.size() - at < 8 * uint64_t{rank}) return true;
    uint64_t rows = rank == 0 ? 1 : Load64(l, at), row = 1;
    for (uint32_t d = 1; d < rank; ++d) {
      uint64_t dim = Load64(l, at + 8 * d);
      if (dim == 0 || row > (uint64_t{1} << 48) / dim) return true;
      row *= dim;
    }
    at += 8 * uint64_t{rank};
    uint64_t per_block = block_elements / row > 1 ? block_elements / row : 1;
    blocks += rows / per_block + 1;
    if (blocks > limit) return false;
  }
  return true;
}

// Recomputes the header, block-record and footer CRCs of checkpoint bytes
// meant for `shard` (record sizes come from its layout, as in the loader),
// as far as the bytes go. See pserver/checkpoint.h for the format.
// Returns false, leaving `s` alone, when the embedded layout would cut more
// than 1024 blocks (LayoutBlocksAtMost): it cannot be the shard's layout,
// layout_fuzzer covers decoding it, and a valid CRC would only make every
// run build a block table of up to Layout::kMaxBlocks entries.
inline bool FixCheckpointCrcs(const pserver::Shard& shard, std::string* s) {
  constexpr size_t kFixed = 40, kRecordHeader = 32, kFooter = 24;
  if (s->size() < kFixed) return false;
  uint64_t layout_len = Load64(*s, 32);
  if (layout_len > s->size() - kFixed || s->size() - kFixed - layout_len < 8)
    return false;
  if (!LayoutBlocksAtMost(s->substr(kFixed, layout_len), 1024)) return false;
  std::string layout = s->substr(kFixed, layout_len);
  FixLayoutCrc(&layout);
  s->replace(kFixed, layout_len, layout);
  size_t at = kFixed + layout_len + 4;
  StoreCrc(s, 0, at);
  at += 4;
  const protocol::Layout& l = shard.layout();
  for (uint32_t id : shard.block_ids()) {
    if (s->size() - at < kRecordHeader) return true;
    uint32_t slots = Load32(*s, at + 12);
    if (slots > 2) return true;
    const protocol::BlockInfo& b = l.blocks()[id];
    size_t len =
        kRecordHeader + b.num_elements *
                            protocol::DTypeSize(l.params()[b.param].dtype) *
                            (1 + slots);
    if (s->size() - at < len + 4) return true;
    StoreCrc(s, at, at + len);
    at += len + 4;
  }
  if (s->size() - at >= kFooter) StoreCrc(s, at, at + kFooter - 4);
  return true;
}

}  // namespace fabps::fuzz

#endif  // FABPS_FUZZ_CHECKPOINT_SHARD_H_
