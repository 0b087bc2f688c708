// Element types of parameters. float32 and float64 have update rules; the
// integer types exist so that layouts, wire formats and checkpoints keep room
// for them (a Shard refuses them today with Unimplemented).
//
// The numeric values are part of the layout encoding and the checkpoint
// format: never renumber, only append.
#ifndef FABPS_PROTOCOL_DTYPE_H_
#define FABPS_PROTOCOL_DTYPE_H_

#include <cstddef>
#include <cstdint>

namespace fabps::protocol {

enum class DType : uint32_t {
  kFloat32 = 1,
  kFloat64 = 2,
  kInt32 = 3,
  kInt64 = 4,
};

// Bytes per element; 0 for a value that is not a DType (e.g. decoded junk).
inline size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat64:
      return 8;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
  }
  return 0;
}

inline bool IsValidDType(uint32_t v) {
  return DTypeSize(static_cast<DType>(v)) != 0;
}

inline bool IsFloatDType(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64;
}

inline const char* DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
  }
  return "invalid";
}

}  // namespace fabps::protocol

#endif  // FABPS_PROTOCOL_DTYPE_H_
