// Arena: one contiguous, page-aligned, pre-faulted allocation that holds a
// shard's parameter values and optimizer state, so that a transport can
// register it with the fabric once (fi_mr_reg on [base(), base()+size())).
//
// The memory is a SharedMemory (base/shared_memory.h): a memfd mapped with
// every page resident and zero before Create returns, so no page faults on
// the apply path and no first-touch cost inside a timed transfer. Create
// therefore costs time proportional to the size (about 2 ms per MiB on a VM
// whose host backs memory lazily). Being shared memory, a trainer on the
// same host may map it and read parameter values without a copy through the
// kernel (the shm provider's copy-free path, transport/local_shares.h).
//
// Ownership: the Arena owns the mapping and unmaps it in its destructor;
// pointers into it (and fabric registrations of it) must not outlive it.
// Thread safety: base() and size() may be called from any thread; the bytes
// are synchronized by whoever writes them (the Shard's block locks).
#ifndef FABPS_PSERVER_ARENA_H_
#define FABPS_PSERVER_ARENA_H_

#include <cstddef>
#include <utility>

#include "base/shared_memory.h"
#include "base/status.h"

namespace fabps::pserver {

class Arena {
 public:
  // Maps at least `bytes` (rounded up to the page size; at least one page).
  // ResourceExhausted/IOError from memfd_create or mmap otherwise.
  static Result<Arena> Create(size_t bytes);

  Arena() = default;

  void* base() const { return memory_.base(); }
  size_t size() const { return memory_.size(); }

 private:
  explicit Arena(SharedMemory m) : memory_(std::move(m)) {}
  SharedMemory memory_;
};

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_ARENA_H_
