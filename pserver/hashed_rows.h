// HashedRows: the rows of one bucket of a hashed table on a pserver: an
// index from id to row, and the rows' values, optimizer state, last-update
// time and version packed in arrays (struct of arrays), so that a bucket
// reads out as contiguous arrays (checkpoints, exports) and a row is found
// with one hash lookup. Removing a row moves the last row into its place.
//
// Memory per row: R * element size * (1 + state slots) for values and
// state, 24 bytes of id, time and version, and the index's entry
// (kIndexBytesPerRow: IdIndex's 16-byte slots at its mean load);
// arrays grow by a quarter, not by doubling. BytesPerRow says the total
// the budget counts.
//
// Evicted ids are remembered with the time they went (tombstones), for
// delta exports (a serving copy must drop them), until PruneTombstones.
//
// Thread safety: none; the shard holds the bucket's lock around every call.
#ifndef FABPS_PSERVER_HASHED_ROWS_H_
#define FABPS_PSERVER_HASHED_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pserver/id_index.h"

namespace fabps::pserver {

class HashedRows {
 public:
  static constexpr size_t kIndexBytesPerRow = 32;

  // Rows of `row_bytes` bytes with `slots` state arrays.
  HashedRows(size_t row_bytes, int slots)
      : row_bytes_(row_bytes), slots_(slots) {}

  static size_t BytesPerRow(size_t row_bytes, int slots) {
    return row_bytes * (1 + slots) + 24 + kIndexBytesPerRow;
  }

  size_t size() const { return ids_.size(); }
  // The row of `id`, or -1.
  int64_t Find(uint64_t id) const { return index_.Find(id); }
  // Appends a row for `id` (which must not be present) with `values` and
  // state arrays set to `state_fill` (row_bytes each; null: zeros); returns
  // its row.
  size_t Insert(uint64_t id, const void* values, const void* state_fill);
  // Removes row `row`; the last row takes its place.
  void Remove(size_t row);
  // Removes row `row` and remembers its id as evicted at `now_ms`.
  void Evict(size_t row, int64_t now_ms) {
    tombstone_ids_.push_back(ids_[row]);
    tombstone_ms_.push_back(now_ms);
    Remove(row);
  }
  // Forgets tombstones older than `before_ms`.
  void PruneTombstones(int64_t before_ms);
  void SetTombstones(std::vector<uint64_t> ids, std::vector<int64_t> ms) {
    tombstone_ids_ = std::move(ids);
    tombstone_ms_ = std::move(ms);
  }
  size_t tombstones() const { return tombstone_ids_.size(); }
  const uint64_t* tombstone_ids() const { return tombstone_ids_.data(); }
  const int64_t* tombstone_ms() const { return tombstone_ms_.data(); }
  void Clear();
  void Reserve(size_t rows);

  char* values(size_t row) { return values_.data() + row * row_bytes_; }
  char* state(int k, size_t row) { return state_[k].data() + row * row_bytes_; }
  const char* values_data() const { return values_.data(); }
  const char* state_data(int k) const { return state_[k].data(); }
  const uint64_t* ids() const { return ids_.data(); }
  const int64_t* updated_ms() const { return updated_ms_.data(); }
  const uint64_t* versions() const { return versions_.data(); }
  void Touch(size_t row, int64_t now_ms, uint64_t version) {
    updated_ms_[row] = now_ms;
    versions_[row] = version;
  }
  void SetUpdated(size_t row, int64_t ms) { updated_ms_[row] = ms; }

 private:
  void Grow();

  size_t row_bytes_;
  int slots_;
  IdIndex index_;
  std::vector<uint64_t> ids_;
  std::vector<int64_t> updated_ms_;
  std::vector<uint64_t> versions_;
  std::vector<char> values_;
  std::vector<char> state_[2];
  std::vector<uint64_t> tombstone_ids_;
  std::vector<int64_t> tombstone_ms_;
};

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_HASHED_ROWS_H_
