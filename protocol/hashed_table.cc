#include "protocol/hashed_table.h"

#include <cmath>

namespace fabps::protocol {
namespace {

// A double in [0, 1) from 53 bits of x.
double Unit(uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }

uint64_t Draw(uint64_t seed, uint64_t id, uint64_t k) {
  return Mix64(Mix64(seed ^ 0x9e3779b97f4a7c15ull) ^ Mix64(id) ^
               (k * 0xd1b54a32d192ed03ull));
}

double InitialValue(const TableConfig& c, uint64_t id, uint64_t j) {
  switch (c.init) {
    case RowInit::kZeros:
      return 0;
    case RowInit::kUniform:
      return (2 * Unit(Draw(c.seed, id, j)) - 1) * c.init_scale;
    case RowInit::kNormal: {
      // Box-Muller from two draws of element j.
      const double u1 = 1.0 - Unit(Draw(c.seed, id, 2 * j));  // (0, 1]
      const double u2 = Unit(Draw(c.seed, id, 2 * j + 1));
      return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2) *
             c.init_scale;
    }
  }
  return 0;
}

}  // namespace

Status ValidateTableConfig(const TableConfig& c) {
  if (c.init != RowInit::kZeros && c.init != RowInit::kUniform &&
      c.init != RowInit::kNormal) {
    return Status::InvalidArgument("table: unknown init " +
                                   std::to_string(static_cast<int>(c.init)));
  }
  if (!std::isfinite(c.init_scale) || c.init_scale < 0)
    return Status::InvalidArgument("table: init_scale must be finite, >= 0");
  if (c.admit_after < 1 || c.admit_after > kMaxAdmitAfter) {
    return Status::InvalidArgument("table: admit_after must be in 1.." +
                                   std::to_string(kMaxAdmitAfter));
  }
  if (!(c.admit_probability > 0 && c.admit_probability <= 1))
    return Status::InvalidArgument(
        "table: admit_probability must be in (0, 1]");
  return Status::OK();
}

const char* RowInitName(RowInit init) {
  switch (init) {
    case RowInit::kZeros:
      return "zeros";
    case RowInit::kUniform:
      return "uniform";
    case RowInit::kNormal:
      return "normal";
  }
  return "unknown";
}

Result<RowInit> RowInitFromName(const std::string& name) {
  for (RowInit i : {RowInit::kZeros, RowInit::kUniform, RowInit::kNormal}) {
    if (name == RowInitName(i)) return i;
  }
  return Status::InvalidArgument("unknown row init '" + name +
                                 "' (one of zeros, uniform, normal)");
}

void InitialRow(const TableConfig& c, uint64_t id, DType dtype,
                uint64_t row_elements, void* out) {
  if (dtype == DType::kFloat64) {
    double* o = static_cast<double*>(out);
    for (uint64_t j = 0; j < row_elements; ++j) o[j] = InitialValue(c, id, j);
  } else {
    float* o = static_cast<float*>(out);
    for (uint64_t j = 0; j < row_elements; ++j)
      o[j] = static_cast<float>(InitialValue(c, id, j));
  }
}

bool Admits(const TableConfig& c, uint64_t id, uint64_t count) {
  if (count < c.admit_after) return false;
  if (c.admit_probability >= 1) return true;
  return Unit(Draw(c.seed ^ 0xad317ull, id, count)) < c.admit_probability;
}

}  // namespace fabps::protocol
