#include "protocol/layout.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <unordered_set>

#include "base/crc32c.h"
#include "base/little_endian.h"

namespace fabps::protocol {
namespace {

constexpr char kMagic[8] = {'F', 'A', 'B', 'P', 'S', 'L', 'Y', '1'};
constexpr uint32_t kVersionDense = 1;   // dense parameters only
constexpr uint32_t kVersionHashed = 2;  // entries carry kind and buckets

// Blocks of one parameter and the rows each holds (a hashed table: the rows
// one push or read of a bucket carries).
struct Cut {
  uint64_t rows_per_block = 0;
  uint64_t blocks = 0;
};
Cut CutOf(const ParamSpec& spec, uint64_t total, uint64_t block_elements) {
  if (IsHashed(spec)) {
    return {std::max<uint64_t>(1, block_elements / total), spec.buckets};
  }
  uint64_t rows = spec.shape.empty() ? 1 : spec.shape[0];
  uint64_t per = std::max<uint64_t>(1, block_elements / (total / rows));
  return {per, (rows + per - 1) / per};
}

}  // namespace

uint64_t Layout::HashName(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::optional<uint64_t> Layout::CountBlocks(
    const std::vector<ParamSpec>& params, uint64_t block_elements) {
  uint64_t blocks = 0;
  for (const ParamSpec& spec : params) {
    uint64_t total = ElementCount(spec.shape);
    if (spec.shape.size() > kMaxRank || total == 0) return std::nullopt;
    blocks += CutOf(spec, total, block_elements).blocks;
    if (blocks > kMaxBlocks) return kMaxBlocks + 1;
  }
  return blocks;
}

Result<Layout> Layout::Build(std::vector<ParamSpec> params,
                             uint64_t block_elements, uint32_t num_pservers) {
  if (num_pservers < 1 || num_pservers > kMaxPservers) {
    return Status::InvalidArgument("layout: number of pservers " +
                                   std::to_string(num_pservers) +
                                   " outside [1, 65536]");
  }
  if (block_elements < 1 || block_elements > kMaxParamElements) {
    return Status::InvalidArgument("layout: block size " +
                                   std::to_string(block_elements) +
                                   " elements is out of range");
  }
  if (params.size() > kMaxParams) {
    return Status::InvalidArgument("layout: too many parameters (" +
                                   std::to_string(params.size()) + ")");
  }
  // Counted first, so that a few bytes of layout cannot make millions of
  // blocks before being refused.
  std::optional<uint64_t> blocks = CountBlocks(params, block_elements);
  if (blocks && *blocks > kMaxBlocks) {
    return Status::InvalidArgument(
        "layout: more than " + std::to_string(kMaxBlocks) + " blocks in all");
  }
  Layout l;
  if (blocks) l.blocks_.reserve(*blocks);
  l.block_elements_ = block_elements;
  l.num_pservers_ = num_pservers;
  std::unordered_set<std::string_view> names;
  names.reserve(params.size());
  l.first_block_.reserve(params.size());
  for (uint32_t p = 0; p < params.size(); ++p) {
    const ParamSpec& spec = params[p];
    std::string what = "layout: parameter " + std::to_string(p);
    FABPS_RETURN_IF_ERROR(CheckParamSpec(spec).WithContext(what));
    const uint64_t total = ElementCount(spec);
    if (!names.insert(spec.name).second) {
      return Status::InvalidArgument(what + " '" + spec.name.substr(0, 64) +
                                     "': duplicate name (parameters overlap)");
    }
    const bool hashed = IsHashed(spec);
    uint64_t rows = hashed ? 0 : spec.shape.empty() ? 1 : spec.shape[0];
    uint64_t row_elements = hashed ? total : total / rows;
    const Cut cut = CutOf(spec, total, block_elements);
    const uint64_t rows_per_block = cut.rows_per_block;
    const uint64_t nblocks = cut.blocks;
    if (l.blocks_.size() + nblocks > kMaxBlocks) {
      return Status::InvalidArgument(what + ": more than " +
                                     std::to_string(kMaxBlocks) +
                                     " blocks in all");
    }
    l.first_block_.push_back(static_cast<uint32_t>(l.blocks_.size()));
    uint64_t base = HashName(spec.name) % num_pservers;
    for (uint64_t b = 0; b < nblocks; ++b) {
      BlockInfo info;
      info.id = static_cast<uint32_t>(l.blocks_.size());
      info.param = p;
      info.index_in_param = b;
      info.pserver =
          static_cast<uint32_t>((base + b % num_pservers) % num_pservers);
      if (hashed) {
        info.first_row = 0;
        info.num_rows = rows_per_block;
        info.buckets = spec.buckets;
      } else {
        info.first_row = b * rows_per_block;
        info.num_rows = std::min(rows_per_block, rows - info.first_row);
      }
      info.row_elements = row_elements;
      info.first_element = info.first_row * row_elements;
      info.num_elements = info.num_rows * row_elements;
      l.blocks_.push_back(info);
    }
  }
  l.params_ = std::move(params);
  return l;
}

std::string Layout::Encode() const {
  std::string out;
  ByteWriter w(&out);
  const bool any_hashed =
      std::any_of(params_.begin(), params_.end(),
                  [](const ParamSpec& p) { return IsHashed(p); });
  w.Raw(kMagic, sizeof(kMagic));
  w.U32(any_hashed ? kVersionHashed : kVersionDense);
  w.U32(num_pservers_);
  w.U64(block_elements_);
  w.U32(static_cast<uint32_t>(params_.size()));
  for (const ParamSpec& p : params_) {
    w.U32(static_cast<uint32_t>(p.name.size()));
    w.Raw(p.name.data(), p.name.size());
    w.U32(static_cast<uint32_t>(p.dtype));
    w.U32(static_cast<uint32_t>(p.shape.size()));
    for (uint64_t d : p.shape) w.U64(d);
    if (any_hashed) {
      w.U32(static_cast<uint32_t>(p.kind));
      w.U32(p.buckets);
    }
  }
  w.U64(blocks_.size());
  w.U32(crc32c::Value(out.data(), out.size()));
  return out;
}

Result<Layout> Layout::Decode(const void* data, size_t n) {
  auto corrupt = [](const std::string& why) {
    return Status::Corruption("layout bytes: " + why);
  };
  if (n < sizeof(kMagic) + 4) return corrupt("too short");
  const uint32_t stored_crc = LoadU32(static_cast<const char*>(data) + n - 4);
  uint32_t crc = crc32c::Value(data, n - 4);
  ByteReader r(data, n - 4);
  char magic[8];
  r.Raw(magic, sizeof(magic));
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    return corrupt("bad magic");
  }
  if (crc != stored_crc) return corrupt("CRC32C mismatch");
  uint32_t version, num_pservers, num_params;
  uint64_t block_elements;
  if (!r.U32(&version) || !r.U32(&num_pservers) || !r.U64(&block_elements) ||
      !r.U32(&num_params)) {
    return corrupt("truncated header");
  }
  if (version != kVersionDense && version != kVersionHashed) {
    return corrupt("unsupported version " + std::to_string(version));
  }
  const bool with_kinds = version == kVersionHashed;
  if (num_params > kMaxParams) return corrupt("parameter count out of range");
  // Each parameter takes at least 12 bytes; reject counts the bytes cannot
  // hold before reserving memory for them.
  if (uint64_t{num_params} * 12 > r.left()) {
    return corrupt("parameter count larger than the bytes");
  }
  std::vector<ParamSpec> params(num_params);
  for (uint32_t i = 0; i < num_params; ++i) {
    uint32_t name_len, dtype, rank;
    std::string_view name;
    if (!r.U32(&name_len) || name_len > kMaxNameBytes ||
        !r.View(&name, name_len) || !r.U32(&dtype) || !r.U32(&rank) ||
        rank > kMaxRank) {
      return corrupt("parameter " + std::to_string(i) +
                     ": truncated or out-of-range entry");
    }
    if (!IsValidDType(dtype)) {
      return corrupt("parameter " + std::to_string(i) + ": unknown dtype " +
                     std::to_string(dtype));
    }
    params[i].name.assign(name);
    params[i].dtype = static_cast<DType>(dtype);
    params[i].shape.resize(rank);
    for (uint32_t d = 0; d < rank; ++d) {
      if (!r.U64(&params[i].shape[d])) {
        return corrupt("parameter " + std::to_string(i) + ": truncated shape");
      }
    }
    if (with_kinds) {
      uint32_t kind = 0;
      if (!r.U32(&kind) || !r.U32(&params[i].buckets)) {
        return corrupt("parameter " + std::to_string(i) + ": truncated kind");
      }
      params[i].kind = static_cast<ParamKind>(kind);
    }
  }
  // Canonical: version 2 only when a table is hashed.
  if (with_kinds &&
      std::none_of(params.begin(), params.end(),
                   [](const ParamSpec& p) { return IsHashed(p); })) {
    return corrupt("version 2 without a hashed table");
  }
  uint64_t num_blocks;
  if (!r.U64(&num_blocks)) return corrupt("truncated block count");
  if (r.left() != 0) return corrupt("trailing bytes");
  // A stored count that the parameters do not give is refused before any
  // block is made.
  if (block_elements >= 1 && block_elements <= kMaxParamElements) {
    std::optional<uint64_t> expect = CountBlocks(params, block_elements);
    if (expect && *expect <= kMaxBlocks && *expect != num_blocks) {
      return corrupt("block count " + std::to_string(num_blocks) +
                     " does not match the parameters (" +
                     std::to_string(*expect) + ")");
    }
  }
  Result<Layout> l = Build(std::move(params), block_elements, num_pservers);
  if (!l.ok()) return corrupt(l.status().message());
  if (l->num_blocks() != num_blocks) {
    return corrupt("block count " + std::to_string(num_blocks) +
                   " does not match the parameters (" +
                   std::to_string(l->num_blocks()) + ")");
  }
  return l;
}

std::vector<uint32_t> Layout::BlocksOf(uint32_t index) const {
  std::vector<uint32_t> ids;
  for (const BlockInfo& b : blocks_) {
    if (b.pserver == index) ids.push_back(b.id);
  }
  return ids;
}

Result<uint32_t> Layout::FindParam(std::string_view name) const {
  for (uint32_t i = 0; i < params_.size(); ++i) {
    if (params_[i].name == name) return i;
  }
  return Status::NotFound("layout has no parameter '" + std::string(name) +
                          "'");
}

bool Layout::SameAs(const Layout& other) const {
  return DescribeDifference(*this, other).empty();
}

std::string Layout::DescribeDifference(const Layout& a, const Layout& b) {
  std::ostringstream os;
  if (a.num_pservers_ != b.num_pservers_) {
    os << "number of pservers " << a.num_pservers_ << " vs " << b.num_pservers_;
  } else if (a.block_elements_ != b.block_elements_) {
    os << "block size " << a.block_elements_ << " vs " << b.block_elements_
       << " elements";
  } else if (a.params_.size() != b.params_.size()) {
    os << "parameter count " << a.params_.size() << " vs " << b.params_.size();
  } else {
    for (size_t i = 0; i < a.params_.size(); ++i) {
      const ParamSpec& x = a.params_[i];
      const ParamSpec& y = b.params_[i];
      if (x.name != y.name) {
        os << "parameter " << i << " name '" << x.name << "' vs '" << y.name
           << "'";
      } else if (x.dtype != y.dtype) {
        os << "parameter " << i << " '" << x.name << "' dtype "
           << DTypeName(x.dtype) << " vs " << DTypeName(y.dtype);
      } else if (x.kind != y.kind || x.buckets != y.buckets) {
        os << "parameter " << i << " '" << x.name << "' "
           << (IsHashed(x)
                   ? "hashed (" + std::to_string(x.buckets) + " buckets)"
                   : std::string("dense"))
           << " vs "
           << (IsHashed(y)
                   ? "hashed (" + std::to_string(y.buckets) + " buckets)"
                   : std::string("dense"));
      } else if (x.shape != y.shape) {
        os << "parameter " << i << " '" << x.name << "' shape "
           << ShapeString(x.shape) << " vs " << ShapeString(y.shape);
      } else {
        continue;
      }
      break;
    }
  }
  return os.str();
}

}  // namespace fabps::protocol
