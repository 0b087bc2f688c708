#include "protocol/model_format.h"

namespace fabps::protocol {

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

safetensors::Metadata ModelMetadata(const std::string& source) {
  return {{"format", "pt"}, {"fabps.source", source}};
}

std::vector<std::string> StateTensorSuffixes(RuleKind rule) {
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

}  // namespace fabps::protocol
