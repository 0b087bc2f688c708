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

struct ParamSpec {
  std::string name;  // unique, 1..kMaxNameBytes bytes
  DType dtype = DType::kFloat32;
  std::vector<uint64_t> shape;  // {} is a scalar; no zero dimensions
};

// The product of `shape` (1 for a scalar), or 0 when a dimension is 0 or the
// product exceeds kMaxParamElements.
uint64_t ElementCount(const std::vector<uint64_t>& shape);
inline uint64_t ElementCount(const ParamSpec& p) {
  return ElementCount(p.shape);
}
// ElementCount(p) * DTypeSize(p.dtype): the bytes of the whole parameter
// (0 for an invalid shape or dtype).
inline uint64_t ByteCount(const ParamSpec& p) {
  return ElementCount(p) * DTypeSize(p.dtype);
}
// R, the elements of one row (1 for rank 0 and 1; 0 for an invalid shape).
uint64_t RowElements(const ParamSpec& p);
// True when the parameter takes rows pushes and reads (rank >= 2: a rank-1
// parameter's "rows" are single elements, pushed densely).
inline bool TakesRows(const ParamSpec& p) { return p.shape.size() >= 2; }

// OK, or InvalidArgument naming the parameter: a name of 1..kMaxNameBytes
// bytes, a known dtype, rank <= kMaxRank, dimensions >= 1 and at most
// kMaxParamElements elements in all.
Status CheckParamSpec(const ParamSpec& p);

// OK when `data` is not null and `bytes` is exactly the parameter's byte
// count; InvalidArgument "parameter '<name>' has N bytes, the buffer M"
// otherwise. `what` (e.g. "InitParam") prefixes the message when not empty.
Status CheckParamBuffer(const ParamSpec& p, const void* data, size_t bytes,
                        const std::string& what = "");

// "[3,4]" for logs and error messages.
std::string ShapeString(const std::vector<uint64_t>& shape);

}  // namespace fabps::protocol

#endif  // FABPS_PROTOCOL_PARAM_SPEC_H_
