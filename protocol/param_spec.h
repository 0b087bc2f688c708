// A parameter as trainers and pservers both describe it, and the arithmetic
// on it that both sides must agree on: element and byte counts, the row
// width R that rows pushes and reads use, and whether a buffer fits.
//
// A parameter with shape [d0, d1, ...] is d0 rows of R = d1*d2*...
// elements (R = 1 for rank 0 and 1). Every count here is computed without
// overflow: a shape whose product exceeds kMaxParamElements, or that has a
// zero dimension, has no elements (ElementCount returns 0) and is refused by
// Layout::Build and by CheckParamShape.
//
// A hashed table (ParamKind::kHashed) is an embedding table without a row
// count: rows are keyed by 64-bit feature ids, created on the pservers when
// an id is admitted and dropped when evicted (protocol/hashed_table.h). Its
// `shape` is the shape of ONE row (rank >= 1), so RowElements is the
// product of the shape; it has no dense values (ByteCount is 0 and
// CheckParamBuffer refuses every buffer): it moves by rows calls only. Its
// ids are spread over `buckets` buckets, each placed like a block.
//
// Thread safety: plain values and pure functions.
#ifndef FABPS_PROTOCOL_PARAM_SPEC_H_
#define FABPS_PROTOCOL_PARAM_SPEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "protocol/dtype.h"

namespace fabps::protocol {

// Bounds of one parameter (names and shapes come from the network).
constexpr uint32_t kMaxNameBytes = 1024;
constexpr uint32_t kMaxRank = 8;
constexpr uint64_t kMaxParamElements = uint64_t{1} << 48;
constexpr uint32_t kMaxBuckets = 1u << 16;
constexpr uint32_t kDefaultBuckets = 64;

// Numbers are stable (written in layouts).
enum class ParamKind : uint32_t {
  kDense = 0,   // a tensor of `shape`, cut into blocks of rows
  kHashed = 1,  // rows of `shape` keyed by uint64 ids, in `buckets` buckets
};

struct ParamSpec {
  std::string name;  // unique, 1..kMaxNameBytes bytes
  DType dtype = DType::kFloat32;
  std::vector<uint64_t> shape;  // {} is a scalar; no zero dimensions
  ParamKind kind = ParamKind::kDense;
  uint32_t buckets = 0;  // kHashed: 1..kMaxBuckets; kDense: 0
};

inline bool IsHashed(const ParamSpec& p) {
  return p.kind == ParamKind::kHashed;
}
// A hashed table's spec: rows of `row_shape`.
ParamSpec HashedSpec(std::string name, DType dtype,
                     std::vector<uint64_t> row_shape,
                     uint32_t buckets = kDefaultBuckets);

// The product of `shape` (1 for a scalar), or 0 when a dimension is 0 or the
// product exceeds kMaxParamElements.
uint64_t ElementCount(const std::vector<uint64_t>& shape);
inline uint64_t ElementCount(const ParamSpec& p) {
  return ElementCount(p.shape);
}
// ElementCount(p) * DTypeSize(p.dtype): the bytes of the whole parameter
// (0 for an invalid shape or dtype, and for a hashed table).
inline uint64_t ByteCount(const ParamSpec& p) {
  return IsHashed(p) ? 0 : ElementCount(p) * DTypeSize(p.dtype);
}
// R, the elements of one row (1 for rank 0 and 1; 0 for an invalid shape;
// a hashed table's row is its whole shape).
uint64_t RowElements(const ParamSpec& p);
// True when the parameter takes rows pushes and reads (a hashed table, or
// rank >= 2: a rank-1 parameter's "rows" are single elements, pushed
// densely).
inline bool TakesRows(const ParamSpec& p) {
  return IsHashed(p) || p.shape.size() >= 2;
}

// OK, or InvalidArgument naming the parameter: a name of 1..kMaxNameBytes
// bytes, a known dtype, rank <= kMaxRank, dimensions >= 1 and at most
// kMaxParamElements elements in all; a known kind; a hashed table has
// rank >= 1 and 1..kMaxBuckets buckets, a dense parameter 0.
Status CheckParamSpec(const ParamSpec& p);

// OK when `data` is not null and `bytes` is exactly the parameter's byte
// count; InvalidArgument "parameter '<name>' has N bytes, the buffer M"
// otherwise, and "... is a hashed table ..." for a hashed table. `what` (e.g.
// "InitParam") prefixes the message when not empty.
Status CheckParamBuffer(const ParamSpec& p, const void* data, size_t bytes,
                        const std::string& what = "");

// "[3,4]" for logs and error messages.
std::string ShapeString(const std::vector<uint64_t>& shape);

}  // namespace fabps::protocol

#endif  // FABPS_PROTOCOL_PARAM_SPEC_H_
