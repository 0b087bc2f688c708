// The safetensors file format: how a trained model leaves fabps as one file
// that numpy, PyTorch and the Hugging Face tools read (docs/formats/
// safetensors.md has the bytes).
//
//   u64 little-endian N | N bytes of JSON header | data section
//
// The header is a JSON object: each key names a tensor and maps to
// {"dtype": "F32", "shape": [784, 256], "data_offsets": [begin, end]}
// (offsets in bytes, relative to the start of the data section, end
// exclusive); the optional key "__metadata__" maps to an object of string
// values. Tensor data is raw, row-major (C order), little-endian. The header
// is padded with spaces to a multiple of 8 bytes so the data section starts
// aligned.
//
// Validation on read (every byte of a file comes from outside): the file is
// at least 8 bytes; 2 <= N <= kMaxHeaderBytes and 8 + N <= file size; the
// header is one JSON object that starts with '{', has no duplicate key, and
// whose entries have exactly the fields above with a known dtype name, a
// shape of non-negative integers whose element count times the dtype size
// fits in 64 bits and equals end - begin; the tensors' ranges, ordered by
// begin, tile the data section exactly (start at 0, no hole, no overlap,
// the last ends at its end). Each failure is Corruption naming the file,
// the tensor and the failed check; nothing is read out of bounds.
//
// Thread safety: the functions are reentrant; a SafetensorsFile is immutable
// after Read/Parse, so its const methods may be called from any threads.
#ifndef FABPS_SAFETENSORS_SAFETENSORS_H_
#define FABPS_SAFETENSORS_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace fabps::safetensors {

// The header of a larger file is refused as corrupt (the reference
// implementation's bound as well).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// The key of the metadata object in the header.
constexpr std::string_view kMetadataKey = "__metadata__";

// Bytes per element of a dtype name the format defines ("BOOL", "U8", "I8",
// "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
// "F64", "I64", "U64"); 0 for any other string.
size_t DTypeSize(std::string_view dtype);

// The bytes of a tensor of `dtype` and `shape`: the product of the
// dimensions ({} counts one element) times DTypeSize. InvalidArgument for an
// unknown dtype or a size that does not fit in 64 bits.
Result<uint64_t> TensorBytes(std::string_view dtype,
                             const std::vector<uint64_t>& shape);

using Metadata = std::map<std::string, std::string>;

// A tensor to write: its bytes are in caller memory, which must stay valid
// during WriteFile.
struct TensorToWrite {
  std::string name;
  std::string dtype;            // a name DTypeSize knows
  std::vector<uint64_t> shape;  // {} is a scalar (one element)
  const void* data = nullptr;   // `bytes` bytes, little-endian elements
  size_t bytes = 0;             // elements * DTypeSize(dtype)
};

// A tensor of a file read back.
struct TensorInfo {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;  // data_offsets, relative to the data section
  uint64_t end = 0;
  uint64_t elements() const;
};

// The first 8 + N bytes of a file holding `tensors` (in this order in the
// data section) and `metadata`. InvalidArgument, naming the tensor, for an
// empty, duplicate or reserved ("__metadata__") name, an unknown dtype, a
// size that does not match the shape, or a null pointer with bytes.
Result<std::string> EncodeHeader(const std::vector<TensorToWrite>& tensors,
                                 const Metadata& metadata);

// Writes the file durably (base/file_util.h: temporary name, fsync,
// rename), so `path` holds either its old contents or the whole new file.
// Errors as EncodeHeader, or IOError naming the path.
Status WriteFile(const std::string& path,
                 const std::vector<TensorToWrite>& tensors,
                 const Metadata& metadata);

class SafetensorsFile {
 public:
  // Reads and validates the whole file (at most `max_bytes`:
  // ResourceExhausted beyond). NotFound when it does not exist.
  static Result<SafetensorsFile> Read(const std::string& path,
                                      size_t max_bytes = size_t{1} << 34);
  // Validates `bytes` (a whole file; `what` names it in errors) and keeps
  // them.
  static Result<SafetensorsFile> Parse(std::string bytes,
                                       const std::string& what);

  // Every tensor, in data-section order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const Metadata& metadata() const { return metadata_; }
  // The tensor called `name`, or nullptr.
  const TensorInfo* Find(std::string_view name) const;
  // The bytes of a tensor of this file (end - begin of them).
  std::string_view Data(const TensorInfo& tensor) const;

 private:
  SafetensorsFile() = default;

  std::string bytes_;
  size_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  Metadata metadata_;
};

}  // namespace fabps::safetensors

#endif  // FABPS_SAFETENSORS_SAFETENSORS_H_
