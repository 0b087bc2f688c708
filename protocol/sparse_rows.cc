#include "protocol/sparse_rows.h"

#include <cstring>

#include "protocol/hashed_table.h"

namespace fabps::protocol {

Result<SparseRowsView> ParseSparseRows(const void* data, size_t bytes,
                                       const BlockInfo& block,
                                       size_t elem_size) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("sparse rows for block " +
                                   std::to_string(block.id) + ": " + why);
  };
  if (data == nullptr) return bad("null data");
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0)
    return bad("not 8-byte aligned");
  if (bytes < 8) return bad("shorter than its header");
  SparseRowsView v;
  std::memcpy(&v.num_rows, data, 8);
  const uint64_t per_row = 8 + block.row_elements * elem_size;
  if (v.num_rows == 0 || v.num_rows > UINT32_MAX ||
      v.num_rows > (bytes - 8) / per_row || 8 + v.num_rows * per_row != bytes) {
    return bad("row count " + std::to_string(v.num_rows) + " does not match " +
               std::to_string(bytes) + " bytes");
  }
  v.row_ids =
      reinterpret_cast<const uint64_t*>(static_cast<const char*>(data) + 8);
  v.values = static_cast<const char*>(data) + 8 + v.num_rows * 8;
  if (IsHashedBlock(block)) {
    for (uint64_t i = 0; i < v.num_rows; ++i) {
      uint64_t id = v.row_ids[i];
      if (BucketOfId(id, block.buckets) != block.index_in_param) {
        return bad("id " + std::to_string(id) + " is in bucket " +
                   std::to_string(BucketOfId(id, block.buckets)) + ", not " +
                   std::to_string(block.index_in_param));
      }
    }
    return v;
  }
  const uint64_t end = block.first_row + block.num_rows;
  for (uint64_t i = 0; i < v.num_rows; ++i) {
    uint64_t id = v.row_ids[i];
    if (id < block.first_row || id >= end) {
      return bad("row id " + std::to_string(id) + " outside rows [" +
                 std::to_string(block.first_row) + ", " + std::to_string(end) +
                 ")");
    }
  }
  return v;
}

std::string EncodeSparseRows(const std::vector<uint64_t>& ids,
                             const void* values, uint64_t row_elements,
                             size_t elem_size) {
  std::string out(SparseRowsBytes(ids.size(), row_elements, elem_size), '\0');
  uint64_t k = ids.size();
  std::memcpy(&out[0], &k, 8);
  if (k > 0) {
    std::memcpy(&out[8], ids.data(), k * 8);
    std::memcpy(&out[8 + k * 8], values, k * row_elements * elem_size);
  }
  return out;
}

}  // namespace fabps::protocol
