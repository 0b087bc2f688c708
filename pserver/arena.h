// Arena: one contiguous, page-aligned, pre-faulted allocation that holds a
// shard's parameter values and optimizer state, so that a transport can
// register it with the fabric once (fi_mr_reg on [base(), base()+size())).
//
// The memory comes from an anonymous private mmap with MAP_POPULATE, and
// every page is written once before Create returns, so every page is
// resident and zero: no page faults on the apply path, and no first-touch
// cost inside a timed RMA. Create therefore costs time proportional to the
// size (about 2 ms per MiB on a VM whose host backs memory lazily).
//
// Ownership: the Arena owns the mapping and unmaps it in its destructor;
// pointers into it (and fabric registrations of it) must not outlive it.
// Thread safety: base() and size() may be called from any thread; the bytes
// are synchronized by whoever writes them (the Shard's block locks).
#ifndef FABPS_PSERVER_ARENA_H_
#define FABPS_PSERVER_ARENA_H_

#include <cstddef>

#include "base/status.h"

namespace fabps::pserver {

class Arena {
 public:
  // Maps at least `bytes` (rounded up to the page size; at least one page).
  // ResourceExhausted/IOError from mmap otherwise.
  static Result<Arena> Create(size_t bytes);

  Arena() = default;
  Arena(Arena&& other) noexcept;
  Arena& operator=(Arena&& other) noexcept;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();

  void* base() const { return base_; }
  size_t size() const { return size_; }

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_ARENA_H_
