// SharedMemory: page-aligned memory that another process of the same host
// may map, for the transport's copy-free path between processes of one host
// (transport/local_shares.h).
//
// Create maps a memfd of at least `bytes` (rounded up to the page size; at
// least one page) MAP_SHARED with MAP_POPULATE and writes every page once, so
// every page is resident and zero: no page faults later on an apply or a
// copy. The memfd's name is "fabps-" and 32 hex digits of a random 128-bit
// nonce; a process that opens the memory by its /proc path checks that name
// on the descriptor it got, so a pid or descriptor number that now belongs
// to something else is never taken for this memory.
//
// While a SharedMemory lives, FindShare answers (from any thread) whether a
// range lies inside one and how another process reaches it. Destroying it
// unmaps and closes the memfd; a process that mapped it keeps its own
// mapping, and the kernel frees the memory when the last mapping goes.
//
// Who may map it: any process allowed to ptrace this one (same user), i.e.
// exactly those that libfabric's shm provider lets copy into and out of
// this process's memory anyway (CMA, process_vm_writev).
#ifndef FABPS_BASE_SHARED_MEMORY_H_
#define FABPS_BASE_SHARED_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"

namespace fabps {

// How a process of the same host reaches bytes of a SharedMemory.
struct ShareInfo {
  uint32_t pid = 0;  // the owner; the memfd is /proc/<pid>/fd/<fd>
  int32_t fd = -1;
  uint64_t offset = 0;  // of the first byte of the range, in the memfd
  uint64_t nonce_hi = 0, nonce_lo = 0;

  // The memfd's name as readlink shows it on a descriptor of the file:
  // "/memfd:fabps-<32 hex digits> (deleted)".
  std::string LinkName() const;
};

class SharedMemory {
 public:
  // ResourceExhausted/IOError (memfd_create, ftruncate, mmap) otherwise.
  static Result<SharedMemory> Create(size_t bytes);

  SharedMemory() = default;
  SharedMemory(SharedMemory&& other) noexcept;
  SharedMemory& operator=(SharedMemory&& other) noexcept;
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  ~SharedMemory();

  void* base() const { return base_; }
  size_t size() const { return size_; }

 private:
  void Release();

  void* base_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
};

// Where [p, p + len) lies, when it lies inside one live SharedMemory of this
// process; nullopt otherwise (len > 0).
std::optional<ShareInfo> FindShare(const void* p, size_t len);

}  // namespace fabps

#endif  // FABPS_BASE_SHARED_MEMORY_H_
