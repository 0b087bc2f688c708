// The safetensors writer: the header is built with nlohmann::json, padded
// with spaces to a multiple of 8, and the data streamed after it.
#include <nlohmann/json.hpp>
#include <set>

#include "base/file_util.h"
#include "base/little_endian.h"
#include "safetensors/safetensors.h"

namespace fabps::safetensors {

Result<std::string> EncodeHeader(const std::vector<TensorToWrite>& tensors,
                                 const Metadata& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    const std::string what = "safetensors: tensor '" + t.name + "'";
    if (t.name.empty()) {
      return Status::InvalidArgument("safetensors: a tensor has no name");
    }
    if (t.name == kMetadataKey) {
      return Status::InvalidArgument(what + ": the name is reserved");
    }
    if (!names.insert(t.name).second) {
      return Status::InvalidArgument(what + ": named twice");
    }
    Result<uint64_t> bytes = TensorBytes(t.dtype, t.shape);
    if (!bytes.ok()) return bytes.status().WithContext(what);
    if (*bytes != t.bytes) {
      return Status::InvalidArgument(what + ": " + std::to_string(t.bytes) +
                                     " bytes given, its shape and dtype need " +
                                     std::to_string(*bytes));
    }
    if (t.data == nullptr && t.bytes != 0) {
      return Status::InvalidArgument(what + ": no data");
    }
    if (offset > UINT64_MAX - t.bytes) {
      return Status::InvalidArgument(what + ": the file would be too large");
    }
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  if (json.size() > kMaxHeaderBytes) {
    return Status::InvalidArgument("safetensors: header of " +
                                   std::to_string(json.size()) +
                                   " bytes, more than the format's bound " +
                                   std::to_string(kMaxHeaderBytes));
  }
  std::string out(8, '\0');
  StoreU64(out.data(), json.size());
  out += json;
  return out;
}

Status WriteFile(const std::string& path,
                 const std::vector<TensorToWrite>& tensors,
                 const Metadata& metadata) {
  Result<std::string> header = EncodeHeader(tensors, metadata);
  if (!header.ok()) return header.status();
  return WriteFileDurably(path, [&](int fd) -> Status {
    FABPS_RETURN_IF_ERROR(WriteAll(fd, header->data(), header->size(), path));
    for (const TensorToWrite& t : tensors) {
      FABPS_RETURN_IF_ERROR(WriteAll(fd, t.data, t.bytes, path));
    }
    return Status::OK();
  });
}

}  // namespace fabps::safetensors
