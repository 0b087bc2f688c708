// CountSketch: a count-min sketch of how often ids were pushed, for a hashed
// table's admission by count (protocol/hashed_table.h): fixed memory (depth
// rows of `width` saturating 8-bit counters) however many ids pass through,
// so counting does not store every id. A count is never below the true
// count (it may be above it when ids collide in every row: an id can be
// admitted early, never late). Conservative update: only the smallest
// counters go up. Halve() ages every count (the eviction sweep calls it once
// per TTL, so ids seen long ago start over).
//
// Thread safety: Add, Halve may run concurrently (relaxed atomics; a race
// may lose an increment, which is one push counted less).
#ifndef FABPS_PSERVER_COUNT_SKETCH_H_
#define FABPS_PSERVER_COUNT_SKETCH_H_

#include <atomic>
#include <cstdint>
#include <memory>

namespace fabps::pserver {

class CountSketch {
 public:
  static constexpr int kDepth = 4;
  // `width` counters per row (rounded up to a power of two).
  explicit CountSketch(uint64_t width);
  // Counts one more push of `id`; returns its count (at most 255).
  uint32_t Add(uint64_t id);
  uint32_t Count(uint64_t id) const;
  void Halve();
  uint64_t bytes() const { return kDepth * width_; }

 private:
  uint64_t Slot(int row, uint64_t id) const;
  uint64_t width_ = 0;
  std::unique_ptr<std::atomic<uint8_t>[]> counters_;
};

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_COUNT_SKETCH_H_
