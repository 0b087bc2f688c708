#include "pserver/id_index.h"

namespace fabps::pserver {

void IdIndex::Rehash(size_t capacity) {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  shift_ = 64;
  for (size_t c = capacity; c > 1; c >>= 1) shift_--;
  size_ = 0;
  for (const Slot& s : old) {
    if (s.row != kEmpty) Insert(s.id, s.row);
  }
}

void IdIndex::Reserve(size_t n) {
  size_t capacity = slots_.empty() ? 16 : slots_.size();
  while (n * 10 > capacity * 7) capacity *= 2;
  if (capacity != slots_.size()) Rehash(capacity);
}

void IdIndex::Insert(uint64_t id, uint32_t row) {
  if (slots_.empty() || (size_ + 1) * 10 > slots_.size() * 7)
    Rehash(slots_.empty() ? 16 : slots_.size() * 2);
  size_t i = Home(id);
  while (slots_[i].row != kEmpty) i = (i + 1) & mask_;
  slots_[i] = Slot{id, row};
  size_++;
}

size_t IdIndex::Locate(uint64_t id) const {
  size_t i = Home(id);
  while (slots_[i].id != id || slots_[i].row == kEmpty) i = (i + 1) & mask_;
  return i;
}

void IdIndex::Set(uint64_t id, uint32_t row) { slots_[Locate(id)].row = row; }

void IdIndex::Erase(uint64_t id) {
  size_t hole = Locate(id);
  // Backward shift: move later entries of the run into the hole when their
  // home slot is not cyclically inside (hole, j].
  for (size_t j = (hole + 1) & mask_; slots_[j].row != kEmpty;
       j = (j + 1) & mask_) {
    const size_t home = Home(slots_[j].id);
    const bool between =
        hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (!between) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole] = Slot{};
  size_--;
}

void IdIndex::Clear() {
  slots_.clear();
  mask_ = 0;
  shift_ = 64;
  size_ = 0;
}

}  // namespace fabps::pserver
