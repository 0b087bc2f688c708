// Rows given with their ids: how a hashed table's rows travel when a job
// starts from a model file. The same bytes are a bucket's InitBlock values
// (the initializing trainer sends each bucket the file's rows of it) and
// what trainer::ReadModelFor returns for a table:
//
//   rows x uint64 id (little-endian) | rows x row_bytes of values
//
// row i's values are id i's. Empty bytes are zero rows.
//
// Thread safety: pure functions; a view points into the caller's bytes.
#ifndef FABPS_PROTOCOL_ID_ROWS_H_
#define FABPS_PROTOCOL_ID_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/status.h"

namespace fabps::protocol {

struct IdRowsView {
  uint64_t rows = 0;
  const char* ids = nullptr;     // rows x 8 bytes, unaligned
  const char* values = nullptr;  // rows x row_bytes

  uint64_t id(uint64_t i) const {
    uint64_t v;
    std::memcpy(&v, ids + i * sizeof(v), sizeof(v));
    return v;
  }
  const char* row(uint64_t i, size_t row_bytes) const {
    return values + i * row_bytes;
  }
};

// The view of `bytes` bytes at `data`; InvalidArgument unless row_bytes > 0
// and bytes is a whole number of (8 + row_bytes).
Result<IdRowsView> ParseIdRows(const void* data, size_t bytes,
                               size_t row_bytes);

// The bytes of `rows` ids and their values (rows x row_bytes at `values`).
std::string EncodeIdRows(const uint64_t* ids, const void* values, uint64_t rows,
                         size_t row_bytes);

}  // namespace fabps::protocol

#endif  // FABPS_PROTOCOL_ID_ROWS_H_
