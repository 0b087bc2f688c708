#include "pserver/gather_rows.h"

#include <cstring>
#include <string>

namespace fabps::pserver {
Status GatherRows(const BlockView& view, const uint64_t* ids, uint64_t count,
                  void* out) {
  const BlockInfo& b = *view.info;
  const size_t row_bytes = b.row_elements * DTypeSize(view.dtype);
  const char* values = static_cast<const char*>(view.values);
  char* dst = static_cast<char*>(out);
  for (uint64_t i = 0; i < count; ++i) {
    // Copied out once: the slot is remote-writable memory.
    uint64_t id;
    std::memcpy(&id, ids + i, sizeof(id));
    const uint64_t local = id - b.first_row;  // wraps when below the block
    if (local >= b.num_rows) {
      return Status::InvalidArgument(
          "rows read for block " + std::to_string(b.id) + ": row id " +
          std::to_string(id) + " outside rows [" + std::to_string(b.first_row) +
          ", " + std::to_string(b.first_row + b.num_rows) + ")");
    }
    std::memcpy(dst + i * row_bytes, values + local * row_bytes, row_bytes);
  }
  return Status::OK();
}

}  // namespace fabps::pserver
