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

ParamSpec HashedSpec(std::string name, DType dtype,
                     std::vector<uint64_t> row_shape, uint32_t buckets) {
  ParamSpec p;
  p.name = std::move(name);
  p.dtype = dtype;
  p.shape = std::move(row_shape);
  p.kind = ParamKind::kHashed;
  p.buckets = buckets;
  return p;
}

uint64_t RowElements(const ParamSpec& p) {
  const uint64_t n = ElementCount(p);
  if (n == 0 || p.shape.empty() || IsHashed(p)) return n;
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
  if (p.kind == ParamKind::kDense) {
    if (p.buckets != 0)
      return Status::InvalidArgument(what +
                                     ": a dense parameter has no buckets");
  } else if (p.kind == ParamKind::kHashed) {
    if (p.shape.empty())
      return Status::InvalidArgument(what +
                                     ": a hashed table's row shape "
                                     "needs rank >= 1");
    if (p.buckets < 1 || p.buckets > kMaxBuckets) {
      return Status::InvalidArgument(what + ": " + std::to_string(p.buckets) +
                                     " buckets, outside [1, " +
                                     std::to_string(kMaxBuckets) + "]");
    }
  } else {
    return Status::InvalidArgument(
        what + ": unknown kind " +
        std::to_string(static_cast<uint32_t>(p.kind)));
  }
  return Status::OK();
}

Status CheckParamBuffer(const ParamSpec& p, const void* data, size_t bytes,
                        const std::string& what) {
  if (IsHashed(p)) {
    return Status::InvalidArgument(
        (what.empty() ? "" : what + ": ") + "parameter '" + p.name +
        "' is a hashed table: it has no dense values (rows calls move its "
        "rows by id)");
  }
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
