// The sparse-rows gradient format: some rows of one block, for
// embedding-like parameters where a step touches few rows.
//
// Bytes (little-endian), as a trainer writes them into a landing slot:
//   u64 k                  number of rows that follow (>= 1)
//   u64 row_id[k]          parameter row indices (not block-relative); each
//                          must be inside the block (a hashed table's: ids
//                          of the block's bucket); duplicates are allowed
//                          and their rows add up
//   T   values[k * R]      row i's gradient is values[i*R .. i*R+R)
// with R = BlockInfo::row_elements and T the parameter's element type. The
// buffer must be 8-byte aligned and exactly 8 + k*8 + k*R*sizeof(T) bytes.
//
// Rules apply only to the rows present ("lazy" updates, pserver/sparse_rows.h
// sums and applies them).
//
// Thread safety: pure functions.
#ifndef FABPS_PROTOCOL_SPARSE_ROWS_H_
#define FABPS_PROTOCOL_SPARSE_ROWS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "protocol/layout.h"

namespace fabps::protocol {

// A validated view into caller bytes; valid while those bytes are.
struct SparseRowsView {
  uint64_t num_rows = 0;
  const uint64_t* row_ids = nullptr;
  const void* values = nullptr;
};

// Size in bytes of a sparse-rows gradient of k rows.
inline size_t SparseRowsBytes(uint64_t k, uint64_t row_elements,
                              size_t elem_size) {
  return 8 + k * 8 + k * row_elements * elem_size;
}

// Validates bytes received for `block` (length, alignment, row ids inside
// the block). InvalidArgument with the reason otherwise.
Result<SparseRowsView> ParseSparseRows(const void* data, size_t bytes,
                                       const BlockInfo& block,
                                       size_t elem_size);

// Builds the bytes of a sparse-rows gradient (the one encoder of the format;
// tests and tools use it, trainers write the same bytes into a slot through
// slot_codec.h).
// `values` holds ids.size() * row_elements elements of elem_size bytes.
std::string EncodeSparseRows(const std::vector<uint64_t>& ids,
                             const void* values, uint64_t row_elements,
                             size_t elem_size);

}  // namespace fabps::protocol

#endif  // FABPS_PROTOCOL_SPARSE_ROWS_H_
