#include "trainer/model_file.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "protocol/layout.h"
#include "protocol/model_format.h"
#include "safetensors/safetensors.h"

namespace fabps::trainer {
namespace {

namespace st = ::fabps::safetensors;
using protocol::SafetensorsDType;

}  // namespace

Status ExportModel(PServerClient* client, const std::string& path,
                   const std::string& source, Deadline deadline) {
  FABPS_ASSIGN_OR_RETURN(const Layout* layout, client->layout(deadline));
  std::vector<std::string> values;
  std::vector<ParamBuffer> buffers;
  values.reserve(layout->params().size());
  for (const ParamSpec& spec : layout->params()) {
    if (protocol::IsHashed(spec)) {
      return Status::Unimplemented(
          "hashed table '" + spec.name +
          "': a trainer cannot list its rows; export the job's checkpoints "
          "(fabps-export --checkpoints), which hold every row");
    }
    values.emplace_back(protocol::ByteCount(spec), '\0');
    buffers.push_back({spec.name, values.back().data(), values.back().size()});
  }
  Status pulled = client->GetParams(buffers, deadline);
  for (const ParamBuffer& b : buffers) client->ForgetBuffer(b.data, b.bytes);
  FABPS_RETURN_IF_ERROR(pulled);
  std::vector<st::TensorToWrite> tensors;
  for (size_t i = 0; i < values.size(); ++i) {
    const ParamSpec& spec = layout->params()[i];
    tensors.push_back({spec.name, SafetensorsDType(spec.dtype), spec.shape,
                       values[i].data(), values[i].size()});
  }
  return st::WriteFile(path, tensors, protocol::ModelMetadata(source));
}

Result<std::vector<std::string>> ReadModelFor(
    const std::string& path, const std::vector<ParamSpec>& params) {
  FABPS_ASSIGN_OR_RETURN(st::SafetensorsFile file,
                         st::SafetensorsFile::Read(path));
  // The tensor `name` of `dtype` and `shape`, or why not.
  auto tensor = [&](const std::string& name, const char* dtype,
                    const std::vector<uint64_t>& shape,
                    const char* owner) -> Result<std::string_view> {
    const std::string what = path + ": tensor '" + name + "'";
    const st::TensorInfo* t = file.Find(name);
    if (t == nullptr) {
      return Status::InvalidArgument(what + " is missing (the model has it" +
                                     owner + ")");
    }
    if (t->dtype != dtype) {
      return Status::InvalidArgument(what + " is " + t->dtype +
                                     ", the model's is " + dtype);
    }
    if (t->shape != shape) {
      return Status::InvalidArgument(
          what + " has shape " + protocol::ShapeString(t->shape) +
          ", the model's is " + protocol::ShapeString(shape));
    }
    return file.Data(*t);
  };
  std::vector<std::string> out;
  std::set<std::string> known;
  for (const ParamSpec& spec : params) {
    if (!protocol::IsHashed(spec)) {
      known.insert(spec.name);
      FABPS_ASSIGN_OR_RETURN(
          std::string_view data,
          tensor(spec.name, SafetensorsDType(spec.dtype), spec.shape, ""));
      out.emplace_back(data);
      continue;
    }
    const std::string ids_name = spec.name + protocol::kHashedIdsSuffix;
    const std::string values_name = spec.name + protocol::kHashedValuesSuffix;
    known.insert(ids_name);
    known.insert(values_name);
    const st::TensorInfo* ids_info = file.Find(ids_name);
    const uint64_t rows =
        ids_info && ids_info->shape.size() == 1 ? ids_info->shape[0] : 0;
    const std::string table = ": hashed table '" + spec.name + "'";
    FABPS_ASSIGN_OR_RETURN(std::string_view ids,
                           tensor(ids_name, "U64", {rows}, table.c_str()));
    std::vector<uint64_t> values_shape = spec.shape;
    values_shape.insert(values_shape.begin(), rows);
    FABPS_ASSIGN_OR_RETURN(std::string_view values,
                           tensor(values_name, SafetensorsDType(spec.dtype),
                                  values_shape, table.c_str()));
    std::vector<uint64_t> sorted(rows);
    std::memcpy(sorted.data(), ids.data(), ids.size());
    std::sort(sorted.begin(), sorted.end());
    auto repeated = std::adjacent_find(sorted.begin(), sorted.end());
    if (repeated != sorted.end()) {
      return Status::InvalidArgument(path + ": tensor '" + ids_name +
                                     "' holds id " + std::to_string(*repeated) +
                                     " twice");
    }
    out.push_back(std::string(ids) + std::string(values));
  }
  for (const st::TensorInfo& t : file.tensors()) {
    if (known.count(t.name) == 0) {
      const std::string_view evicted = protocol::kHashedEvictedSuffix;
      const bool delta = t.name.size() > evicted.size() &&
                         t.name.compare(t.name.size() - evicted.size(),
                                        evicted.size(), evicted) == 0;
      return Status::InvalidArgument(
          path + ": tensor '" + t.name + "' is not a parameter of the model" +
          (delta ? " (a delta of fabps-export --since: start from a full "
                   "export)"
                 : ""));
    }
  }
  return out;
}

}  // namespace fabps::trainer
