#include "transport/fabric.h"

#include <cstring>

#include "transport/ofi/ofi_factory.h"

namespace fabps::transport {
namespace {

constexpr uint32_t kRemoteRegionMagic = 0x46525231;  // "FRR1"
constexpr size_t kRemoteRegionBytes = 4 + 3 * 8;

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; i++)
    out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetU64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

std::string RemoteRegion::Serialize() const {
  std::string out;
  out.reserve(kRemoteRegionBytes);
  for (int i = 0; i < 4; i++)
    out.push_back(static_cast<char>((kRemoteRegionMagic >> (8 * i)) & 0xff));
  PutU64(&out, base);
  PutU64(&out, key);
  PutU64(&out, length);
  return out;
}

Result<RemoteRegion> RemoteRegion::Parse(const std::string& bytes) {
  if (bytes.size() != kRemoteRegionBytes) {
    return Status::Corruption(
        "remote region descriptor: " + std::to_string(bytes.size()) +
        " bytes, expected " + std::to_string(kRemoteRegionBytes));
  }
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  uint32_t magic =
      p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
  if (magic != kRemoteRegionMagic)
    return Status::Corruption("remote region descriptor: bad magic");
  RemoteRegion r;
  r.base = GetU64(p + 4);
  r.key = GetU64(p + 12);
  r.length = GetU64(p + 20);
  if (r.base + r.length < r.base) {
    return Status::Corruption(
        "remote region descriptor: base + length overflows");
  }
  return r;
}

bool MemoryRegion::Contains(const void* ptr, size_t len) const {
  auto start = reinterpret_cast<uintptr_t>(data());
  auto p = reinterpret_cast<uintptr_t>(ptr);
  return p >= start && len <= size() && p - start <= size() - len;
}

const std::vector<std::string>& KnownProviders() {
  static const std::vector<std::string> kNames = {
      "verbs;ofi_rxm", "tcp;ofi_rxm", "shm", "sockets"};
  return kNames;
}

namespace {

// The backends compiled in, each through the one factory its folder exports.
struct Backend {
  const char* name;
  Result<std::unique_ptr<Fabric>> (*create)(const FabricOptions&);
};
constexpr Backend kBackends[] = {
    {"ofi", &ofi::CreateOfiFabric},
};

}  // namespace

Result<std::unique_ptr<Fabric>> OpenFabric(const FabricOptions& options) {
  for (const Backend& b : kBackends) {
    if (options.backend == b.name) return b.create(options);
  }
  std::string built;
  for (const Backend& b : kBackends) {
    built += std::string(built.empty() ? "" : ", ") + b.name;
  }
  return Status::InvalidArgument("unknown fabric backend '" + options.backend +
                                 "'; built: " + built);
}

}  // namespace fabps::transport
