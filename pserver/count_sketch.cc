#include "pserver/count_sketch.h"

#include <algorithm>

#include "protocol/hashed_table.h"

namespace fabps::pserver {

CountSketch::CountSketch(uint64_t width) {
  width_ = 1;
  while (width_ < width) width_ <<= 1;
  counters_.reset(new std::atomic<uint8_t>[kDepth * width_]);
  for (uint64_t i = 0; i < kDepth * width_; ++i) counters_[i] = 0;
}

uint64_t CountSketch::Slot(int row, uint64_t id) const {
  const uint64_t h = protocol::Mix64(
      id ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(row + 1)));
  return row * width_ + (h & (width_ - 1));
}

uint32_t CountSketch::Count(uint64_t id) const {
  uint32_t c = 255;
  for (int r = 0; r < kDepth; ++r)
    c = std::min<uint32_t>(
        c, counters_[Slot(r, id)].load(std::memory_order_relaxed));
  return c;
}

uint32_t CountSketch::Add(uint64_t id) {
  const uint32_t c = Count(id);
  if (c == 255) return c;
  for (int r = 0; r < kDepth; ++r) {
    std::atomic<uint8_t>& slot = counters_[Slot(r, id)];
    if (slot.load(std::memory_order_relaxed) == c)
      slot.store(static_cast<uint8_t>(c + 1), std::memory_order_relaxed);
  }
  return c + 1;
}

void CountSketch::Halve() {
  for (uint64_t i = 0; i < kDepth * width_; ++i)
    counters_[i].store(counters_[i].load(std::memory_order_relaxed) / 2,
                       std::memory_order_relaxed);
}

}  // namespace fabps::pserver
