#include "trainer/model_file.h"

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
  std::vector<std::string> out;
  for (const ParamSpec& spec : params) {
    const std::string what = path + ": tensor '" + spec.name + "'";
    const st::TensorInfo* t = file.Find(spec.name);
    if (t == nullptr) {
      return Status::InvalidArgument(what + " is missing (the model has it)");
    }
    if (t->dtype != SafetensorsDType(spec.dtype)) {
      return Status::InvalidArgument(what + " is " + t->dtype +
                                     ", the model's is " +
                                     SafetensorsDType(spec.dtype));
    }
    if (t->shape != spec.shape) {
      return Status::InvalidArgument(
          what + " has shape " + protocol::ShapeString(t->shape) +
          ", the model's is " + protocol::ShapeString(spec.shape));
    }
    out.emplace_back(file.Data(*t));
  }
  if (file.tensors().size() != params.size()) {
    for (const st::TensorInfo& t : file.tensors()) {
      bool known = false;
      for (const ParamSpec& spec : params) known |= spec.name == t.name;
      if (!known) {
        return Status::InvalidArgument(path + ": tensor '" + t.name +
                                       "' is not a parameter of the model");
      }
    }
  }
  return out;
}

}  // namespace fabps::trainer
