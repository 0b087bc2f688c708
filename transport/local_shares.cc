#include "transport/local_shares.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/log.h"

namespace fabps::transport {
namespace {

// Shares kept at most, after DropStale.
constexpr size_t kMaxShares = 1024;

std::string FdPath(uint32_t pid, int fd) {
  return "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
}

// What the symbolic link `path` names, "" when it cannot be read.
std::string LinkOf(const std::string& path) {
  char link[256];
  ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
  return n < 0 ? std::string() : std::string(link, static_cast<size_t>(n));
}

}  // namespace

LocalShares::Mapping::~Mapping() {
  munmap(base_, size_);
  close(pidfd_);
}

bool LocalShares::Mapping::OwnerAlive() const {
  pollfd p{pidfd_, POLLIN, 0};
  int n = poll(&p, 1, 0);
  return n == 0 || (n < 0 && errno == EINTR);
}

bool LocalShares::Mapping::OwnerHoldsIt() const {
  return OwnerAlive() &&
         LinkOf(FdPath(share_.pid, share_.fd)) == share_.LinkName();
}

Result<std::shared_ptr<const LocalShares::Mapping>> LocalShares::Open(
    const ShareInfo& share) {
  const std::string path = FdPath(share.pid, share.fd);
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return PosixError("open " + path, errno);
  auto fail = [fd](Status s) {
    close(fd);
    return s;
  };
  // The name through our own descriptor: whatever /proc/<pid>/fd/<fd> is
  // now, it is this file that we map.
  const std::string link = LinkOf("/proc/self/fd/" + std::to_string(fd));
  if (link != share.LinkName()) {
    return fail(Status::InvalidArgument(path + " is '" + link +
                                        "', not the shared memory '" +
                                        share.LinkName() + "'"));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) return fail(PosixError("fstat " + path, errno));
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return fail(Status::InvalidArgument(path + " is empty"));
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_POPULATE, fd, 0);
  int map_errno = errno;
  close(fd);
  if (p == MAP_FAILED) return PosixError("mmap " + path, map_errno);
  // glibc 2.36 declares pidfd_open without C linkage: the system call.
  int pidfd = static_cast<int>(
      syscall(SYS_pidfd_open, static_cast<pid_t>(share.pid), 0));
  if (pidfd < 0) {
    int err = errno;
    munmap(p, size);
    return PosixError("pidfd_open " + std::to_string(share.pid), err);
  }
  return std::shared_ptr<const Mapping>(
      new Mapping(share, static_cast<char*>(p), size, pidfd));
}

std::shared_ptr<const LocalShares::Mapping> LocalShares::Map(
    const ShareInfo& share) {
  const auto key = std::make_pair(share.nonce_hi, share.nonce_lo);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = maps_.find(key);
  if (it != maps_.end()) return it->second;
  auto opened = Open(share);
  if (!opened.ok()) {
    FABPS_LOG(WARNING) << "shared memory of process " << share.pid
                       << " not mapped, using the fabric for it: "
                       << opened.status().ToString();
  }
  DropStale();
  if (maps_.size() >= kMaxShares) maps_.erase(maps_.begin());
  auto mapping = opened.ok() ? opened.value() : nullptr;
  maps_[key] = mapping;
  return mapping;
}

void LocalShares::DropStale() {
  for (auto m = maps_.begin(); m != maps_.end();) {
    if (m->second != nullptr && !m->second->OwnerHoldsIt()) {
      m = maps_.erase(m);
    } else {
      ++m;
    }
  }
}

size_t LocalShares::mapped() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, m] : maps_) n += m != nullptr;
  return n;
}

}  // namespace fabps::transport
