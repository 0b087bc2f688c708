// The parameter layout: how named tensors are cut into blocks and which
// pserver owns each block.
//
// A Layout is a pure function of (parameter list, block size, number of
// pservers). Trainers and pservers build it independently and get the same
// blocks, ids and owners; Encode() bytes are identical for equal inputs, so a
// checkpoint can compare layouts byte for byte.
//
// Blocks. Parameter p with shape [d0, d1, ...] is seen as d0 rows of
// R = d1*d2*... elements (R = 1 for rank 0 and 1). Every block holds whole
// rows, so sparse row updates never straddle blocks: a block has
// max(1, block_elements / R) rows (the last block of a parameter may have
// fewer). A block never spans two parameters. When one row is larger than
// block_elements the block is that one row.
//
// A hashed table (ParamSpec::kind kHashed) is cut into its `buckets`
// buckets instead: block b of the table is bucket b (BucketOfId,
// protocol/hashed_table.h, says which ids it holds), owned by the same
// formula as a dense block. Its BlockInfo has first_row 0, and num_rows is
// the rows one rows push or read of it carries at most:
// max(1, block_elements / R); it holds any number of rows.
//
// Block ids are global: parameters in list order, blocks of a parameter in
// order, numbered from 0. Block b of parameter p lives on pserver
//   (HashName(name_p) + b) mod N,
// computed without overflow as ((HashName mod N) + (b mod N)) mod N.
// HashName is 64-bit FNV-1a over the name's bytes (offset basis
// 0xcbf29ce484222325, prime 0x100000001b3). This is a wire contract: changing
// it changes where every block lives.
//
// Thread safety: a Layout is immutable after Build/Decode; const methods may
// be called from any number of threads.
#ifndef FABPS_PROTOCOL_LAYOUT_H_
#define FABPS_PROTOCOL_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "protocol/dtype.h"
#include "protocol/param_spec.h"

namespace fabps::protocol {

struct BlockInfo {
  uint32_t id = 0;              // global block id == index in blocks()
  uint32_t param = 0;           // index in params()
  uint64_t index_in_param = 0;  // b in the owner formula
  uint32_t pserver = 0;         // owner, in [0, N)
  uint64_t first_element = 0;   // offset inside the parameter, in elements
  uint64_t num_elements = 0;    // > 0; num_rows * row_elements
  uint64_t first_row = 0;       // parameter row index of the first row
  uint64_t num_rows = 0;        // > 0
  uint64_t row_elements = 0;    // R of the parameter, > 0
  uint32_t buckets = 0;         // a hashed table's bucket count; 0: dense
};

inline bool IsHashedBlock(const BlockInfo& b) { return b.buckets != 0; }

class Layout {
 public:
  static constexpr uint64_t kDefaultBlockElements = uint64_t{1} << 20;
  // Bounds enforced by Build and Decode (bytes come from the network).
  static constexpr uint32_t kMaxParams = 1u << 20;
  static constexpr uint32_t kMaxPservers = 1u << 16;
  // The block table takes 64 bytes a block: 2^22 blocks keep it at 256 MiB
  // (a few bytes of Decode input could otherwise ask for 128 GiB).
  static constexpr uint64_t kMaxBlocks = uint64_t{1} << 22;

  // Validates the inputs (CheckParamSpec of each, unique names, N >= 1,
  // block_elements >= 1) and cuts the blocks.
  // Returns InvalidArgument naming the offending parameter otherwise.
  static Result<Layout> Build(std::vector<ParamSpec> params,
                              uint64_t block_elements, uint32_t num_pservers);

  // Serialized form: magic "FABPSLY1", version, N, block_elements, the
  // parameter list, the block count, and a CRC32C of everything before it.
  // Version 1 when every parameter is dense, 2 (each parameter also names
  // its kind and bucket count) when one is a hashed table.
  std::string Encode() const;
  // Decodes and validates bytes from a peer or file: magic, version, every
  // length against the bytes left, all Build checks (duplicate names, i.e.
  // overlapping parameters), the block count and the CRC. Returns Corruption
  // or InvalidArgument with the failed check; never reads out of bounds.
  static Result<Layout> Decode(const void* data, size_t n);

  static uint64_t HashName(std::string_view name);

  const std::vector<ParamSpec>& params() const { return params_; }
  const std::vector<BlockInfo>& blocks() const { return blocks_; }
  uint64_t block_elements() const { return block_elements_; }
  uint32_t num_pservers() const { return num_pservers_; }
  uint64_t num_blocks() const { return blocks_.size(); }

  // Global ids of the blocks pserver `index` owns, ascending.
  std::vector<uint32_t> BlocksOf(uint32_t index) const;
  // Index of the parameter called `name`, or NotFound.
  Result<uint32_t> FindParam(std::string_view name) const;
  // Global id of the first block of parameter `param` (blocks of a
  // parameter are consecutive).
  uint32_t FirstBlockOf(uint32_t param) const { return first_block_[param]; }

  // Same parameters, block size and N.
  bool SameAs(const Layout& other) const;
  // "" when SameAs; otherwise a short human sentence naming the first
  // difference ("N 4 vs 3", "parameter 2 'fc1.w' shape [..] vs [..]").
  static std::string DescribeDifference(const Layout& a, const Layout& b);

 private:
  // The blocks `params` cut into (saturating just above kMaxBlocks), before
  // any is made; nullopt when a shape is empty or too large (Build says
  // which). block_elements must be at least 1.
  static std::optional<uint64_t> CountBlocks(
      const std::vector<ParamSpec>& params, uint64_t block_elements);
  Layout() = default;

  std::vector<ParamSpec> params_;
  std::vector<BlockInfo> blocks_;
  std::vector<uint32_t> first_block_;
  uint64_t block_elements_ = 0;
  uint32_t num_pservers_ = 0;
};

}  // namespace fabps::protocol

#endif  // FABPS_PROTOCOL_LAYOUT_H_
