// IdIndex: a hashed table bucket's map from 64-bit id to row number, an
// open-addressing table (linear probing, backward-shift deletion) of
// 16-byte slots in one array: a lookup is one or two cache lines and no
// allocation, where a node-based std::unordered_map took an allocation per
// insert and a pointer chase per lookup (bench/README.md, "Rows").
//
// Capacity is a power of two, at most 70% full (it doubles past that), so
// a row costs 16 / load = 23-46 bytes of index. The slot of an id comes
// from the top bits of a mix of the id that is independent of the bucket
// hash (ids of one bucket share Mix64(id) mod buckets).
//
// Thread safety: none; the caller serializes.
#ifndef FABPS_PSERVER_ID_INDEX_H_
#define FABPS_PSERVER_ID_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fabps::pserver {

class IdIndex {
 public:
  // The row of `id`, or -1.
  int64_t Find(uint64_t id) const {
    if (size_ == 0) return -1;
    for (size_t i = Home(id);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.row == kEmpty) return -1;
      if (s.id == id) return s.row;
    }
  }
  // Adds `id` (absent) at `row`.
  void Insert(uint64_t id, uint32_t row);
  // Moves present `id` to `row`.
  void Set(uint64_t id, uint32_t row);
  // Removes present `id`.
  void Erase(uint64_t id);
  void Clear();
  // Room for `n` ids without growing.
  void Reserve(size_t n);
  size_t size() const { return size_; }
  size_t bytes() const { return slots_.size() * sizeof(Slot); }

 private:
  static constexpr uint32_t kEmpty = 0xffffffffu;
  struct Slot {
    uint64_t id = 0;
    uint32_t row = kEmpty;
  };
  size_t Home(uint64_t id) const {
    uint64_t x = id ^ 0x5851f42d4c957f2dull;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return static_cast<size_t>(x >> shift_);
  }
  size_t Locate(uint64_t id) const;  // the slot of present `id`
  void Rehash(size_t capacity);

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_ID_INDEX_H_
