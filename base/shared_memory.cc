#include "base/shared_memory.h"

#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>

namespace fabps {
namespace {

struct Entry {
  size_t size = 0;
  int fd = -1;
  uint64_t nonce_hi = 0, nonce_lo = 0;
};

// Live SharedMemory of this process, by base address.
std::mutex& RegistryMu() {
  static std::mutex mu;
  return mu;
}
std::map<uintptr_t, Entry>& Registry() {
  static auto* registry = new std::map<uintptr_t, Entry>();
  return *registry;
}

std::string NameOf(uint64_t hi, uint64_t lo) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "fabps-%016" PRIx64 "%016" PRIx64, hi, lo);
  return buf;
}

Status Nonce(uint64_t* hi, uint64_t* lo) {
  uint64_t v[2];
  size_t got = 0;
  while (got < sizeof(v)) {
    ssize_t n = getrandom(reinterpret_cast<char*>(v) + got, sizeof(v) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PosixError("getrandom for a shared memory name", errno);
    got += static_cast<size_t>(n);
  }
  *hi = v[0];
  *lo = v[1];
  return Status::OK();
}

}  // namespace

std::string ShareInfo::LinkName() const {
  return "/memfd:" + NameOf(nonce_hi, nonce_lo) + " (deleted)";
}

Result<SharedMemory> SharedMemory::Create(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (bytes == 0) bytes = page;
  if (bytes > SIZE_MAX - page) {
    return Status::InvalidArgument("shared memory size too large");
  }
  const size_t size = (bytes + page - 1) / page * page;
  Entry e;
  e.size = size;
  FABPS_RETURN_IF_ERROR(Nonce(&e.nonce_hi, &e.nonce_lo));
  e.fd = memfd_create(NameOf(e.nonce_hi, e.nonce_lo).c_str(), MFD_CLOEXEC);
  if (e.fd < 0) return PosixError("memfd_create", errno);
  if (ftruncate(e.fd, static_cast<off_t>(size)) != 0) {
    int err = errno;
    close(e.fd);
    return PosixError(
        "ftruncate of a " + std::to_string(size) + "-byte shared memory file",
        err);
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_POPULATE, e.fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    close(e.fd);
    return PosixError("mmap of " + std::to_string(size) + " shared bytes", err);
  }
  // MAP_POPULATE gives the guest kernel's pages, but under a hypervisor the
  // host may still back them lazily: the first access to each page costs
  // microseconds (measured: ~2 ms per MiB here). Touch every page once now so
  // that no apply, copy or checkpoint pays it later.
  volatile char* bytes_p = static_cast<volatile char*>(p);
  for (size_t off = 0; off < size; off += page) bytes_p[off] = 0;
  {
    std::lock_guard<std::mutex> lock(RegistryMu());
    Registry()[reinterpret_cast<uintptr_t>(p)] = e;
  }
  SharedMemory m;
  m.base_ = p;
  m.size_ = size;
  m.fd_ = e.fd;
  return m;
}

SharedMemory::SharedMemory(SharedMemory&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::exchange(other.fd_, -1)) {}

SharedMemory& SharedMemory::operator=(SharedMemory&& other) noexcept {
  if (this != &other) {
    Release();
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

SharedMemory::~SharedMemory() { Release(); }

void SharedMemory::Release() {
  if (base_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(RegistryMu());
    Registry().erase(reinterpret_cast<uintptr_t>(base_));
  }
  munmap(base_, size_);
  close(fd_);
  base_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

std::optional<ShareInfo> FindShare(const void* p, size_t len) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(RegistryMu());
  auto& registry = Registry();
  auto it = registry.upper_bound(addr);
  if (it == registry.begin() || len == 0) return std::nullopt;
  it = std::prev(it);
  const uintptr_t start = it->first;
  const Entry& e = it->second;
  if (addr - start > e.size || len > e.size - (addr - start)) {
    return std::nullopt;
  }
  ShareInfo info;
  info.pid = static_cast<uint32_t>(getpid());
  info.fd = e.fd;
  info.offset = addr - start;
  info.nonce_hi = e.nonce_hi;
  info.nonce_lo = e.nonce_lo;
  return info;
}

}  // namespace fabps
