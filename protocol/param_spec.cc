#include "protocol/param_spec.h"

#include <sstream>

namespace fabps::protocol {

uint64_t ElementCount(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (d == 0 || d > kMaxParamElements / n) return 0;
    n *= d;
  }
  return n;
}

uint64_t RowElements(const ParamSpec& p) {
  const uint64_t n = ElementCount(p);
  if (n == 0 || p.shape.empty()) return n;
  return n / p.shape[0];
}

Status CheckParamSpec(const ParamSpec& p) {
  const std::string what = "parameter '" + p.name.substr(0, 64) + "'";
  if (p.name.empty() || p.name.size() > kMaxNameBytes) {
    return Status::InvalidArgument(what + ": name must have 1.." +
                                   std::to_string(kMaxNameBytes) + " bytes");
  }
  if (!IsValidDType(static_cast<uint32_t>(p.dtype)))
    return Status::InvalidArgument(what + ": unknown dtype");
  if (p.shape.size() > kMaxRank)
    return Status::InvalidArgument(what + ": rank above 8");
  if (ElementCount(p.shape) == 0) {
    return Status::InvalidArgument(what + ": shape " + ShapeString(p.shape) +
                                   " is empty or too large");
  }
  return Status::OK();
}

Status CheckParamBuffer(const ParamSpec& p, const void* data, size_t bytes,
                        const std::string& what) {
  const uint64_t want = ByteCount(p);
  if (bytes == want && data != nullptr) return Status::OK();
  return Status::InvalidArgument(
      (what.empty() ? "" : what + ": ") + "parameter '" + p.name + "' has " +
      std::to_string(want) + " bytes, the buffer " +
      (data == nullptr ? std::string("is NULL")
                       : "has " + std::to_string(bytes)));
}

std::string ShapeString(const std::vector<uint64_t>& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << ']';
  return os.str();
}

}  // namespace fabps::protocol
