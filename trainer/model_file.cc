#include "trainer/model_file.h"

#include "pserver/layout.h"
#include "safetensors/safetensors.h"

namespace fabps::trainer {
namespace {

namespace st = ::fabps::safetensors;

uint64_t Elements(const ParamSpec& spec) {
  uint64_t n = 1;
  for (uint64_t d : spec.shape) n *= d;
  return n;
}

st::Metadata MetadataFor(const std::string& source) {
  return {{"format", "pt"}, {"fabps.source", source}};
}

// The slot names of a rule's state arrays (update_rule.h: v; m and s; s).
std::vector<std::string> SlotNames(RuleKind rule) {
  switch (rule) {
    case RuleKind::kSgd:
      return {};
    case RuleKind::kMomentum:
      return {"momentum.v"};
    case RuleKind::kNesterov:
      return {"nesterov.v"};
    case RuleKind::kAdam:
      return {"adam.m", "adam.v"};
    case RuleKind::kAdaGrad:
      return {"adagrad.s"};
  }
  return {};
}

}  // namespace

const char* SafetensorsDType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "F32";
    case DType::kFloat64:
      return "F64";
    case DType::kInt32:
      return "I32";
    case DType::kInt64:
      return "I64";
  }
  return "invalid";
}

Result<DType> DTypeFromSafetensors(std::string_view name) {
  for (DType t :
       {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    if (name == SafetensorsDType(t)) return t;
  }
  return Status::InvalidArgument("dtype " + std::string(name) +
                                 " has no fabps parameter type");
}

Status ExportModel(PServerClient* client, const std::string& path,
                   const std::string& source, Deadline deadline) {
  FABPS_ASSIGN_OR_RETURN(const Layout* layout, client->layout(deadline));
  std::vector<std::string> values;
  std::vector<ParamBuffer> buffers;
  values.reserve(layout->params().size());
  for (const ParamSpec& spec : layout->params()) {
    values.emplace_back(Elements(spec) * DTypeSize(spec.dtype), '\0');
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
  return st::WriteFile(path, tensors, MetadataFor(source));
}

Status WriteCheckpointedModel(const pserver::CheckpointedModel& model,
                              const std::string& path,
                              const std::string& state_path,
                              const std::string& source) {
  std::vector<st::TensorToWrite> tensors, state;
  for (size_t i = 0; i < model.params.size(); ++i) {
    const ParamSpec& spec = model.layout.params()[i];
    const pserver::CheckpointedParam& p = model.params[i];
    const char* dtype = SafetensorsDType(spec.dtype);
    tensors.push_back(
        {spec.name, dtype, spec.shape, p.values.data(), p.values.size()});
    const std::vector<std::string> slots = SlotNames(p.rule);
    for (size_t k = 0; k < slots.size(); ++k) {
      state.push_back({spec.name + "/" + slots[k], dtype, spec.shape,
                       p.state[k].data(), p.state[k].size()});
    }
  }
  FABPS_RETURN_IF_ERROR(st::WriteFile(path, tensors, MetadataFor(source)));
  if (state_path.empty()) return Status::OK();
  return st::WriteFile(state_path, state, MetadataFor(source));
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
          what + " has shape " + pserver::ShapeString(t->shape) +
          ", the model's is " + pserver::ShapeString(spec.shape));
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
