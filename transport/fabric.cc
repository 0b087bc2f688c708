#include "transport/fabric.h"

#include "base/little_endian.h"
#include "transport/ofi/ofi_factory.h"

namespace fabps::transport {
namespace {

constexpr uint32_t kRemoteRegionMagic = 0x46525231;  // "FRR1"
constexpr uint32_t kSharedRegionMagic = 0x46525232;  // "FRR2"
constexpr size_t kRemoteRegionBytes = 4 + 3 * 8;
constexpr size_t kSharedRegionBytes = kRemoteRegionBytes + 4 + 4 + 3 * 8;

}  // namespace

std::string RemoteRegion::Serialize() const {
  std::string out;
  out.reserve(share ? kSharedRegionBytes : kRemoteRegionBytes);
  ByteWriter w(&out);
  w.U32(share ? kSharedRegionMagic : kRemoteRegionMagic);
  w.U64(base);
  w.U64(key);
  w.U64(length);
  if (share) {
    w.U32(share->pid);
    w.U32(static_cast<uint32_t>(share->fd));
    w.U64(share->offset);
    w.U64(share->nonce_hi);
    w.U64(share->nonce_lo);
  }
  return out;
}

Result<RemoteRegion> RemoteRegion::Parse(const std::string& bytes) {
  if (bytes.size() != kRemoteRegionBytes &&
      bytes.size() != kSharedRegionBytes) {
    return Status::Corruption(
        "remote region descriptor: " + std::to_string(bytes.size()) +
        " bytes, expected " + std::to_string(kRemoteRegionBytes) + " or " +
        std::to_string(kSharedRegionBytes));
  }
  ByteReader r(bytes);
  uint32_t magic = 0;
  RemoteRegion region;
  // The size was checked: these reads cannot run short.
  r.U32(&magic);
  r.U64(&region.base);
  r.U64(&region.key);
  r.U64(&region.length);
  const uint32_t want = bytes.size() == kRemoteRegionBytes ? kRemoteRegionMagic
                                                           : kSharedRegionMagic;
  if (magic != want)
    return Status::Corruption("remote region descriptor: bad magic");
  if (region.base + region.length < region.base) {
    return Status::Corruption(
        "remote region descriptor: base + length overflows");
  }
  if (magic == kSharedRegionMagic) {
    ShareInfo s;
    uint32_t fd = 0;
    r.U32(&s.pid);
    r.U32(&fd);
    r.U64(&s.offset);
    r.U64(&s.nonce_hi);
    r.U64(&s.nonce_lo);
    s.fd = static_cast<int32_t>(fd);
    if (s.pid == 0 || s.fd < 0 || s.offset + region.length < s.offset) {
      return Status::Corruption(
          "remote region descriptor: bad shared memory (pid " +
          std::to_string(s.pid) + ", fd " + std::to_string(s.fd) + ")");
    }
    region.share = s;
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
