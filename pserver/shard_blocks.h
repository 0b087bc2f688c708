// The shard's private records (pserver/shard.h): a pending gradient, an
// owned block and a hashed table on this shard. Only shard*.cc include it.
#ifndef FABPS_PSERVER_SHARD_BLOCKS_H_
#define FABPS_PSERVER_SHARD_BLOCKS_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "pserver/shard.h"

namespace fabps::pserver {

struct Shard::Pending {
  GradientRef g;
  ApplyCallback done;
  Status status;
};

// A hashed table on this shard: its configuration, admission sketch and
// counters.
struct Shard::Table {
  const ParamSpec* spec = nullptr;
  TableConfig config;
  size_t row_bytes = 0;
  int slots = 0;
  std::unique_ptr<CountSketch> sketch;  // when admit_after > 1
  std::vector<Block*> buckets;          // the owned ones
  std::atomic<uint64_t> admitted{0}, evicted_ttl{0}, evicted_budget{0},
      not_admitted{0}, over_budget{0};
  std::atomic<int64_t> last_halving_ms{0};
};

struct Shard::Block {
  const BlockInfo* info = nullptr;
  Table* table = nullptr;              // a hashed table's bucket
  std::unique_ptr<HashedRows> hashed;  // its rows (under mu)
  DType dtype = DType::kFloat32;
  size_t elem_size = 0;
  const UpdateRuleConfig* rule = nullptr;
  int slots = 0;
  size_t value_offset = 0;
  size_t value_bytes = 0;
  char* values = nullptr;
  char* state[2] = {nullptr, nullptr};
  char* accum = nullptr;  // kSync only

  mutable std::mutex mu;            // guards everything below up to queue_mu
  std::condition_variable step_cv;  // kSync: signalled when a step opens
  uint64_t update_count = 0;
  // kSync: the open step's contributions.
  uint32_t contributors = 0;
  std::vector<uint8_t> contributed;  // per trainer
  bool any_dense = false;
  bool accum_zero = true;        // accum holds only zeros
  std::vector<uint8_t> touched;  // per row, for all-sparse steps
  std::deque<Pending> parked;    // ApplyAsync gradients of later steps
  // Whether (and since when) the open step waits for gradients: its first
  // one arrived or a later step's was parked (ForceOverdueSteps).
  bool waiting = false;
  SteadyClock::time_point waiting_since;

  // Addresses for TSan fork/join annotations around parallel_for.
  char fork = 0;
  char join = 0;

  std::mutex queue_mu;  // guards queue and draining
  std::deque<Pending> queue;
  bool draining = false;
};

// Fills n elements of type `dtype` at p with v.
inline void Fill(DType dtype, char* p, size_t n, double v) {
  if (dtype == DType::kFloat32) {
    std::fill_n(reinterpret_cast<float*>(p), n, static_cast<float>(v));
  } else {
    std::fill_n(reinterpret_cast<double*>(p), n, v);
  }
}

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_SHARD_BLOCKS_H_
