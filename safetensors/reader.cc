// The safetensors reader: every check of safetensors.h, in the order the
// bytes are met, before a tensor is handed out.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "base/file_util.h"
#include "base/little_endian.h"
#include "safetensors/safetensors.h"

namespace fabps::safetensors {
namespace {

using nlohmann::json;

// Parses the header text; refuses duplicate keys of the top object and of
// a tensor's entry (nlohmann would keep the last one silently).
Result<json> ParseJson(std::string_view text, const std::string& what) {
  std::string duplicate;
  std::vector<std::set<std::string>> open_objects;
  json::parser_callback_t check = [&](int /*depth*/, json::parse_event_t event,
                                      json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == json::parse_event_t::key && !open_objects.empty()) {
      std::string key = parsed.get<std::string>();
      if (!open_objects.back().insert(key).second && duplicate.empty()) {
        duplicate = std::move(key);
      }
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    return Status::Corruption(what + ": header is not JSON: " + e.what());
  }
  if (!duplicate.empty()) {
    return Status::Corruption(what + ": header names '" + duplicate +
                              "' twice");
  }
  if (!header.is_object()) {
    return Status::Corruption(what + ": header is not a JSON object");
  }
  return header;
}

Result<uint64_t> Unsigned(const json& v, const std::string& what) {
  if (!v.is_number_unsigned()) {
    return Status::Corruption(what + " is not a non-negative integer");
  }
  return v.get<uint64_t>();
}

Result<TensorInfo> ParseTensor(const std::string& name, const json& entry,
                               const std::string& file) {
  const std::string what = file + ": tensor '" + name + "'";
  if (name.empty()) return Status::Corruption(file + ": a tensor has no name");
  if (!entry.is_object()) {
    return Status::Corruption(what + ": entry is not an object");
  }
  for (const auto& [key, value] : entry.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return Status::Corruption(what + ": unknown field '" + key + "'");
    }
  }
  TensorInfo t;
  t.name = name;
  auto dtype = entry.find("dtype");
  if (dtype == entry.end() || !dtype->is_string()) {
    return Status::Corruption(what + ": no dtype string");
  }
  t.dtype = dtype->get<std::string>();
  if (DTypeSize(t.dtype) == 0) {
    return Status::Corruption(what + ": unknown dtype '" + t.dtype + "'");
  }
  auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array()) {
    return Status::Corruption(what + ": no shape array");
  }
  for (const json& d : *shape) {
    Result<uint64_t> dim = Unsigned(d, what + ": a shape dimension");
    if (!dim.ok()) return dim.status();
    t.shape.push_back(*dim);
  }
  auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2) {
    return Status::Corruption(what + ": no data_offsets [begin, end]");
  }
  Result<uint64_t> begin = Unsigned((*offsets)[0], what + ": begin offset");
  if (!begin.ok()) return begin.status();
  Result<uint64_t> end = Unsigned((*offsets)[1], what + ": end offset");
  if (!end.ok()) return end.status();
  t.begin = *begin;
  t.end = *end;
  if (t.end < t.begin) {
    return Status::Corruption(what + ": data_offsets end " +
                              std::to_string(t.end) + " before begin " +
                              std::to_string(t.begin));
  }
  Result<uint64_t> bytes = TensorBytes(t.dtype, t.shape);
  if (!bytes.ok()) {
    return Status::Corruption(what + ": " + bytes.status().message());
  }
  if (*bytes != t.end - t.begin) {
    return Status::Corruption(
        what + ": data_offsets span " + std::to_string(t.end - t.begin) +
        " bytes, its dtype and shape need " + std::to_string(*bytes));
  }
  return t;
}

Result<Metadata> ParseMetadata(const json& entry, const std::string& file) {
  if (!entry.is_object()) {
    return Status::Corruption(file + ": __metadata__ is not an object");
  }
  Metadata metadata;
  for (const auto& [key, value] : entry.items()) {
    if (!value.is_string()) {
      return Status::Corruption(file + ": __metadata__ '" + key +
                                "' is not a string");
    }
    metadata[key] = value.get<std::string>();
  }
  return metadata;
}

// The ranges, ordered by begin, must tile [0, data_bytes) exactly.
Status CheckTiling(std::vector<TensorInfo>* tensors, uint64_t data_bytes,
                   const std::string& file) {
  std::sort(tensors->begin(), tensors->end(),
            [](const TensorInfo& a, const TensorInfo& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  uint64_t expected = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& t : *tensors) {
    const std::string what = file + ": tensor '" + t.name + "'";
    if (t.end > data_bytes) {
      return Status::Corruption(
          what + ": data_offsets end " + std::to_string(t.end) +
          " past the data section of " + std::to_string(data_bytes) + " bytes");
    }
    if (t.begin < expected) {
      return Status::Corruption(what + ": bytes [" + std::to_string(t.begin) +
                                ", " + std::to_string(t.end) +
                                ") overlap tensor '" + previous->name + "'");
    }
    if (t.begin > expected) {
      return Status::Corruption(
          what + ": hole of " + std::to_string(t.begin - expected) +
          " bytes before it at offset " + std::to_string(expected));
    }
    expected = t.end;
    previous = &t;
  }
  if (expected != data_bytes) {
    return Status::Corruption(file + ": " +
                              std::to_string(data_bytes - expected) +
                              " bytes after the last tensor");
  }
  return Status::OK();
}

}  // namespace

Result<SafetensorsFile> SafetensorsFile::Read(const std::string& path,
                                              size_t max_bytes) {
  Result<std::string> bytes = ReadWholeFile(path, max_bytes);
  if (!bytes.ok()) return bytes.status();
  return Parse(std::move(*bytes), path);
}

Result<SafetensorsFile> SafetensorsFile::Parse(std::string bytes,
                                               const std::string& what) {
  if (bytes.size() < 8) {
    return Status::Corruption(what + ": " + std::to_string(bytes.size()) +
                              " bytes, shorter than the 8-byte header length");
  }
  const uint64_t n = LoadU64(bytes.data());
  if (n < 2 || n > kMaxHeaderBytes) {
    return Status::Corruption(what + ": header length " + std::to_string(n) +
                              " outside [2, " +
                              std::to_string(kMaxHeaderBytes) + "]");
  }
  if (n > bytes.size() - 8) {
    return Status::Corruption(what + ": header length " + std::to_string(n) +
                              " past the end of the file (" +
                              std::to_string(bytes.size()) + " bytes)");
  }
  std::string_view text(bytes.data() + 8, n);
  if (text.front() != '{') {
    return Status::Corruption(what + ": header does not start with '{'");
  }
  Result<json> header = ParseJson(text, what);
  if (!header.ok()) return header.status();

  SafetensorsFile file;
  for (const auto& [key, value] : header->items()) {
    if (key == kMetadataKey) {
      Result<Metadata> metadata = ParseMetadata(value, what);
      if (!metadata.ok()) return metadata.status();
      file.metadata_ = std::move(*metadata);
      continue;
    }
    Result<TensorInfo> tensor = ParseTensor(key, value, what);
    if (!tensor.ok()) return tensor.status();
    file.tensors_.push_back(std::move(*tensor));
  }
  file.data_start_ = 8 + n;
  FABPS_RETURN_IF_ERROR(
      CheckTiling(&file.tensors_, bytes.size() - file.data_start_, what));
  file.bytes_ = std::move(bytes);
  return file;
}

const TensorInfo* SafetensorsFile::Find(std::string_view name) const {
  for (const TensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string_view SafetensorsFile::Data(const TensorInfo& tensor) const {
  return std::string_view(bytes_).substr(data_start_ + tensor.begin,
                                         tensor.end - tensor.begin);
}

}  // namespace fabps::safetensors
