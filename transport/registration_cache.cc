#include "transport/registration_cache.h"

#include <unistd.h>

namespace fabps::transport {

RegistrationCache::RegistrationCache(Fabric* fabric, size_t max_entries,
                                     size_t max_bytes)
    : fabric_(fabric),
      max_entries_(max_entries < 1 ? 1 : max_entries),
      max_bytes_(max_bytes) {}

Result<std::shared_ptr<MemoryRegion>> RegistrationCache::Get(const void* ptr,
                                                             size_t len) {
  if (ptr == nullptr || len == 0) {
    return Status::InvalidArgument("registration cache: empty buffer");
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  if (start + len < start)
    return Status::InvalidArgument("registration cache: range wraps");
  std::lock_guard<std::mutex> l(mu_);
  // The candidate is the region with the greatest start <= ptr.
  auto it = by_start_.upper_bound(start);
  if (it != by_start_.begin()) {
    --it;
    if (it->second.region->Contains(ptr, len)) {
      lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
      stats_.hits++;
      return it->second.region;
    }
  }
  stats_.misses++;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t reg_start = start & ~(page - 1);
  uintptr_t reg_end = (start + len + page - 1) & ~(page - 1);
  FABPS_ASSIGN_OR_RETURN(std::unique_ptr<MemoryRegion> mr,
                         fabric_->Register(reinterpret_cast<void*>(reg_start),
                                           reg_end - reg_start));
  std::shared_ptr<MemoryRegion> region(std::move(mr));
  auto old = by_start_.find(reg_start);
  if (old != by_start_.end())
    EraseLocked(old);  // a smaller one at the same start
  lru_.push_front(reg_start);
  by_start_[reg_start] = Entry{region, lru_.begin()};
  stats_.bytes += region->size();
  EvictLocked();
  return region;
}

void RegistrationCache::EraseLocked(std::map<uintptr_t, Entry>::iterator it) {
  stats_.bytes -= it->second.region->size();
  lru_.erase(it->second.lru_pos);
  by_start_.erase(it);
}

void RegistrationCache::EvictLocked() {
  while (!lru_.empty() &&
         (by_start_.size() > max_entries_ || stats_.bytes > max_bytes_)) {
    // Never evict the entry just added (front), even when it alone is over
    // the byte bound: the caller needs it now.
    if (by_start_.size() == 1) break;
    auto it = by_start_.find(lru_.back());
    EraseLocked(it);
    stats_.evictions++;
  }
}

void RegistrationCache::Invalidate(const void* ptr, size_t len) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t end = start + len;
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = by_start_.begin(); it != by_start_.end();) {
    uintptr_t rs = it->first;
    uintptr_t re = rs + it->second.region->size();
    auto next = std::next(it);
    if (rs < end && start < re) EraseLocked(it);
    it = next;
  }
}

RegistrationCache::Stats RegistrationCache::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  Stats s = stats_;
  s.entries = by_start_.size();
  return s;
}

}  // namespace fabps::transport
