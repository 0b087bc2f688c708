#include "transport/fabric.h"

#include "base/little_endian.h"
#include "transport/ofi/ofi_factory.h"

namespace fabps::transport {
namespace {

constexpr uint32_t kRemoteRegionMagic = 0x46525231;  // "FRR1"
constexpr size_t kRemoteRegionBytes = 4 + 3 * 8;

}  // namespace

std::string RemoteRegion::Serialize() const {
  std::string out;
  out.reserve(kRemoteRegionBytes);
  ByteWriter w(&out);
  w.U32(kRemoteRegionMagic);
  w.U64(base);
  w.U64(key);
  w.U64(length);
  return out;
}

Result<RemoteRegion> RemoteRegion::Parse(const std::string& bytes) {
  if (bytes.size() != kRemoteRegionBytes) {
    return Status::Corruption(
        "remote region descriptor: " + std::to_string(bytes.size()) +
        " bytes, expected " + std::to_string(kRemoteRegionBytes));
  }
  ByteReader r(bytes);
  uint32_t magic = 0;
  RemoteRegion region;
  // The size was checked: these reads cannot run short.
  r.U32(&magic);
  r.U64(&region.base);
  r.U64(&region.key);
  r.U64(&region.length);
  if (magic != kRemoteRegionMagic)
    return Status::Corruption("remote region descriptor: bad magic");
  if (region.base + region.length < region.base) {
    return Status::Corruption(
        "remote region descriptor: base + length overflows");
  }
  return region;
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
