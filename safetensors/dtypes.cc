#include <array>
#include <utility>

#include "safetensors/safetensors.h"

namespace fabps::safetensors {

size_t DTypeSize(std::string_view dtype) {
  static constexpr std::array<std::pair<std::string_view, size_t>, 15> kSizes =
      {{{"BOOL", 1},
        {"U8", 1},
        {"I8", 1},
        {"F8_E5M2", 1},
        {"F8_E4M3", 1},
        {"I16", 2},
        {"U16", 2},
        {"F16", 2},
        {"BF16", 2},
        {"I32", 4},
        {"U32", 4},
        {"F32", 4},
        {"F64", 8},
        {"I64", 8},
        {"U64", 8}}};
  for (const auto& [name, size] : kSizes) {
    if (name == dtype) return size;
  }
  return 0;
}

Result<uint64_t> TensorBytes(std::string_view dtype,
                             const std::vector<uint64_t>& shape) {
  const size_t size = DTypeSize(dtype);
  if (size == 0) {
    return Status::InvalidArgument("unknown dtype '" + std::string(dtype) +
                                   "'");
  }
  uint64_t bytes = size;
  for (uint64_t d : shape) {
    if (d != 0 && bytes > UINT64_MAX / d) {
      return Status::InvalidArgument("shape too large: its size overflows");
    }
    bytes *= d;
  }
  return bytes;
}

uint64_t TensorInfo::elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

}  // namespace fabps::safetensors
