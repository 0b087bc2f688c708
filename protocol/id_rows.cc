#include "protocol/id_rows.h"

namespace fabps::protocol {

Result<IdRowsView> ParseIdRows(const void* data, size_t bytes,
                               size_t row_bytes) {
  if (row_bytes == 0) return Status::InvalidArgument("rows of 0 bytes");
  const size_t per_row = sizeof(uint64_t) + row_bytes;
  if (bytes % per_row != 0) {
    return Status::InvalidArgument(
        std::to_string(bytes) +
        " bytes of rows with their ids: not a whole "
        "number of " +
        std::to_string(per_row) + "-byte rows (8-byte id and " +
        std::to_string(row_bytes) + " bytes of values)");
  }
  IdRowsView v;
  v.rows = bytes / per_row;
  v.ids = static_cast<const char*>(data);
  v.values = v.ids + v.rows * sizeof(uint64_t);
  return v;
}

std::string EncodeIdRows(const uint64_t* ids, const void* values, uint64_t rows,
                         size_t row_bytes) {
  std::string out;
  out.reserve(rows * (sizeof(uint64_t) + row_bytes));
  out.append(reinterpret_cast<const char*>(ids), rows * sizeof(uint64_t));
  out.append(static_cast<const char*>(values), rows * row_bytes);
  return out;
}

}  // namespace fabps::protocol
