#include "pserver/hashed_rows.h"

#include <cstring>

namespace fabps::pserver {

void HashedRows::Reserve(size_t rows) {
  ids_.reserve(rows);
  updated_ms_.reserve(rows);
  versions_.reserve(rows);
  values_.reserve(rows * row_bytes_);
  for (int k = 0; k < slots_; ++k) state_[k].reserve(rows * row_bytes_);
  index_.Reserve(rows);
}

void HashedRows::Grow() {
  const size_t n = ids_.size();
  if (n < ids_.capacity()) return;
  Reserve(n + n / 4 + 16);
}

size_t HashedRows::Insert(uint64_t id, const void* values,
                          const void* state_fill) {
  Grow();
  const size_t row = ids_.size();
  index_.Insert(id, static_cast<uint32_t>(row));
  ids_.push_back(id);
  updated_ms_.push_back(0);
  versions_.push_back(0);
  const char* v = static_cast<const char*>(values);
  values_.insert(values_.end(), v, v + row_bytes_);
  for (int k = 0; k < slots_; ++k) {
    if (state_fill != nullptr) {
      const char* s = static_cast<const char*>(state_fill);
      state_[k].insert(state_[k].end(), s, s + row_bytes_);
    } else {
      state_[k].resize(state_[k].size() + row_bytes_, 0);
    }
  }
  return row;
}

void HashedRows::Remove(size_t row) {
  const size_t last = ids_.size() - 1;
  index_.Erase(ids_[row]);
  if (row != last) {
    ids_[row] = ids_[last];
    updated_ms_[row] = updated_ms_[last];
    versions_[row] = versions_[last];
    std::memcpy(values(row), values(last), row_bytes_);
    for (int k = 0; k < slots_; ++k)
      std::memcpy(state(k, row), state(k, last), row_bytes_);
    index_.Set(ids_[row], static_cast<uint32_t>(row));
  }
  ids_.pop_back();
  updated_ms_.pop_back();
  versions_.pop_back();
  values_.resize(last * row_bytes_);
  for (int k = 0; k < slots_; ++k) state_[k].resize(last * row_bytes_);
}

void HashedRows::PruneTombstones(int64_t before_ms) {
  size_t keep = 0;
  for (size_t i = 0; i < tombstone_ids_.size(); ++i) {
    if (tombstone_ms_[i] < before_ms) continue;
    tombstone_ids_[keep] = tombstone_ids_[i];
    tombstone_ms_[keep++] = tombstone_ms_[i];
  }
  tombstone_ids_.resize(keep);
  tombstone_ms_.resize(keep);
}

void HashedRows::Clear() {
  index_.Clear();
  ids_.clear();
  updated_ms_.clear();
  versions_.clear();
  values_.clear();
  for (int k = 0; k < slots_; ++k) state_[k].clear();
  tombstone_ids_.clear();
  tombstone_ms_.clear();
}

}  // namespace fabps::pserver
