// Hashed embedding tables (ParamSpec kind kHashed): which bucket an id is
// in, and a table's configuration as trainers choose it and pservers keep
// it: the initial value of a row, admission and eviction.
//
// Placement. Id x of a table with B buckets is in bucket
//   BucketOfId(x, B) = Mix64(x) mod B
// where Mix64 is the splitmix64 finalizer (x ^= x >> 30; x *=
// 0xbf58476d1ce4e5b9; x ^= x >> 27; x *= 0x94d049bb133111eb; x ^= x >> 31).
// Bucket b is the table's block b (protocol/layout.h), so its owner is a block
// owner. This is a wire contract: changing it moves every row.
//
// Initial rows. A row that does not exist yet reads as InitialRow: zeros,
// or a draw that depends only on (seed, id, element index), the same on
// every pserver, every run and after a re-shard, so nothing is stored for
// an id until it is admitted.
//
// Admission. A push of an id that has no row counts toward its admission;
// the push that admits it creates the row (from InitialRow) and applies its
// gradient; a push before that is dropped (counted as not admitted). An id
// is admitted at its admit_after-th push (1: at once); with
// admit_probability p < 1, each push from then on admits it with
// probability p (a deterministic draw from seed, id and count).
//
// Eviction. A row not updated for ttl_seconds is dropped (0: never), and
// while the table's rows take more than budget_bytes on a pserver (0: no
// budget) the least recently updated go first. An evicted id reads as its
// initial row again and must be admitted anew.
//
// Thread safety: plain values and pure functions.
#ifndef FABPS_PROTOCOL_HASHED_TABLE_H_
#define FABPS_PROTOCOL_HASHED_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "protocol/dtype.h"

namespace fabps::protocol {

inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

inline uint32_t BucketOfId(uint64_t id, uint32_t buckets) {
  return static_cast<uint32_t>(Mix64(id) % buckets);
}

// Numbers are stable (sent in the control plane's InitConfig).
enum class RowInit : uint32_t {
  kZeros = 0,
  kUniform = 1,  // uniform in [-init_scale, init_scale)
  kNormal = 2,   // normal, mean 0, standard deviation init_scale
};

// Pushes counted before admission saturate here (8-bit counters).
constexpr uint32_t kMaxAdmitAfter = 255;

struct TableConfig {
  RowInit init = RowInit::kZeros;
  double init_scale = 0.01;
  uint64_t seed = 0;
  uint32_t admit_after = 1;        // >= 1
  double admit_probability = 1.0;  // in (0, 1]
  uint64_t ttl_seconds = 0;        // 0: rows never expire
  uint64_t budget_bytes = 0;       // per pserver; 0: no budget
};

// OK, or InvalidArgument naming the field: a known init, a finite
// init_scale >= 0, admit_after in 1..kMaxAdmitAfter, admit_probability in
// (0, 1].
Status ValidateTableConfig(const TableConfig& c);

// "zeros", "uniform", "normal"; the inverse refuses other names.
const char* RowInitName(RowInit init);
Result<RowInit> RowInitFromName(const std::string& name);

// Writes the initial row of `id` (row_elements elements of `dtype`, float32
// or float64) to `out`.
void InitialRow(const TableConfig& c, uint64_t id, DType dtype,
                uint64_t row_elements, void* out);

// Whether the push that brings `id`'s count of pushes to `count` (1, 2,
// ...) admits it.
bool Admits(const TableConfig& c, uint64_t id, uint64_t count);

// A hashed table's counters on one pserver (its status, metrics and the
// clients' table stats).
struct TableStats {
  std::string name;
  uint32_t pserver = 0;        // the pserver's index
  uint64_t rows = 0;           // held now
  uint64_t bytes = 0;          // rows x bytes per row, plus the sketch
  uint64_t bytes_per_row = 0;  // values, state, id, times and index
  uint64_t admitted = 0;       // rows created
  uint64_t evicted_ttl = 0;
  uint64_t evicted_budget = 0;
  uint64_t not_admitted = 0;  // pushed rows dropped: id not admitted yet
  uint64_t over_budget = 0;   // sweeps that found the table over budget
};

}  // namespace fabps::protocol

#endif  // FABPS_PROTOCOL_HASHED_TABLE_H_
