// RegistrationCache: registrations of caller buffers, reused so that the hot
// path never registers memory (on verbs a registration pins pages and costs
// far more than the transfer it serves).
//
// Get(ptr, len) returns a region that covers [ptr, ptr + len): a cached one
// when one does, else a new registration of the whole pages around the range,
// which is cached. The cache is bounded by entry count and registered bytes;
// past either bound the least recently used entries are dropped. A dropped
// region stays registered while an operation or caller still holds its
// shared_ptr, so eviction never pulls memory from under a transfer.
//
// Contract with callers: a cached registration names virtual addresses. When
// a caller frees memory it handed to Get (and the allocator may give the same
// addresses back for other memory), it calls Invalidate on the range first.
//
// Thread safe.
#ifndef FABPS_TRANSPORT_REGISTRATION_CACHE_H_
#define FABPS_TRANSPORT_REGISTRATION_CACHE_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>

#include "base/status.h"
#include "transport/fabric.h"

namespace fabps::transport {

class RegistrationCache {
 public:
  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t evictions = 0;
    size_t entries = 0;
    size_t bytes = 0;
  };

  // `fabric` must outlive the cache.
  RegistrationCache(Fabric* fabric, size_t max_entries, size_t max_bytes);

  // A region covering [ptr, ptr + len); len > 0.
  Result<std::shared_ptr<MemoryRegion>> Get(const void* ptr, size_t len);
  // Drops every cached region that overlaps [ptr, ptr + len).
  void Invalidate(const void* ptr, size_t len);
  Stats stats() const;

 private:
  struct Entry {
    std::shared_ptr<MemoryRegion> region;
    std::list<uintptr_t>::iterator lru_pos;
  };
  void EvictLocked();
  void EraseLocked(std::map<uintptr_t, Entry>::iterator it);

  Fabric* const fabric_;
  const size_t max_entries_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::map<uintptr_t, Entry> by_start_;  // keyed by region start address
  std::list<uintptr_t> lru_;             // front: most recently used
  Stats stats_;
};

}  // namespace fabps::transport

#endif  // FABPS_TRANSPORT_REGISTRATION_CACHE_H_
