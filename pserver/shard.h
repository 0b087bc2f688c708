// Shard: the blocks one pserver owns, their values and optimizer state in a
// single registered-once arena, and the apply path that turns gradients into
// updates.
//
// Memory. Shard::Create maps one Arena (arena.h). Inside it, values of all
// owned blocks come first (ascending block id, each block contiguous and
// 64-byte aligned), then optimizer state, then sync-mode sums. ValueRegion()
// gives a block's value offset and size, so trainers can RMA-read values at
// arena_base() + offset. Such reads are not synchronized with applies; a
// reader that needs a consistent block calls ReadValues() (or
// ReadBlockLocked()), which copy under the block's lock.
//
// Apply. Updates of one block are serialized by the block's lock; different
// blocks apply in parallel; a block larger than 2 * parallel_grain_elements
// is also split across threads with tbb::parallel_for (in an isolated region,
// so a thread that holds a block lock never picks up unrelated work that
// could wait on that lock).
//   - Apply(): synchronous; runs on the calling thread (and on the caller's
//     TBB arena for the parallel_for).
//   - ApplyAsync(): validates, queues the gradient on its block and returns;
//     a task in the shard's own TBB arena (num_threads threads) applies it
//     and then calls the callback. Gradients of one block queued by
//     ApplyAsync are applied in submission order. A small block
//     (ShardOptions::inline_apply_bytes, kAsync) whose queue was empty is
//     applied on the caller's thread instead, callback included, before
//     ApplyAsync returns.
//
// Modes. kAsync (default): every gradient is applied as it comes, the
// block's update count t goes up by one each time (Adam bias correction and
// lr schedules use t). kSync: a block is at step t (its update count); a
// gradient must name step == t and a trainer in [0, num_trainers); the shard
// adds the num_trainers gradients of step t up (sum, not mean: fold 1/N into
// the learning rate) and applies the sum once, which opens step t+1.
// A gradient for a later step waits: Apply() blocks until the step opens or
// the deadline passes; ApplyAsync() parks it and consumes it (then calls
// back) when its step opens, so the sender's slot stays taken until then.
// An earlier step is refused (FailedPrecondition), as is a second gradient
// from one trainer for one step (AlreadyExists) and, with max_steps_ahead
// set, a step more than that far beyond the block's (InvalidArgument).
// A trainer that never sends would hold its blocks at their step forever:
// ForceOverdueSteps applies what arrived once a step waited too long. A step
// mixing dense and sparse gradients applies densely; an all-sparse step updates
// the rows any trainer sent. A trainer that touched nothing of a block in a
// step sends an empty share (GradientFormat::kEmpty): it counts as its
// gradient and adds nothing; a step whose shares are all empty updates no
// row but is still a step (the update count, Adam's t, goes up).
//
// Hashed tables (ParamSpec kind kHashed, protocol/hashed_table.h). Each
// owned bucket is a block without arena memory: its rows live in a
// HashedRows (pserver/hashed_rows.h) under the block's lock, so buckets
// apply in parallel and one bucket's updates are serialized like a
// block's. A rows gradient (kSparseRows) for a bucket applies the rule to
// the rows of admitted ids (creating the row of an id that this push
// admits from its initial value) and counts the others toward admission;
// the bucket's update count goes up once per push, as a block's. A dense
// gradient is refused; InitBlock of a bucket sets its rows from ids and
// values (protocol/id_rows.h: a job started from a model file); GatherHashed
// reads rows
// (the initial row for an id without one); EvictHashed drops rows by TTL
// and budget; HashedStats counts. Hashed tables run in async mode only
// (Create refuses them in sync mode). Times are unix milliseconds, so they
// survive a checkpoint and a restart.
//
// Errors. Block ids, lengths, alignment, sparse row ids, steps and trainer
// ids come from the network: bad ones are returned as InvalidArgument (never
// a crash), and the shard goes on serving.
//
// Thread safety: every public method may be called from any thread
// concurrently, except the destructor: no call may be in progress or start
// once it begins. The destructor cancels parked sync gradients (callbacks
// get Cancelled) and waits for queued ones to finish.
#ifndef FABPS_PSERVER_SHARD_H_
#define FABPS_PSERVER_SHARD_H_

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "pserver/arena.h"
#include "pserver/count_sketch.h"
#include "pserver/gradient.h"
#include "pserver/hashed_rows.h"
#include "pserver/protocol_types.h"
#include "pserver/update_rule.h"

namespace fabps::pserver {

enum class ApplyMode : uint32_t { kAsync = 0, kSync = 1 };

struct ShardOptions {
  uint32_t shard_index = 0;  // which pserver of the layout this is
  // Rule of every parameter not named in `rules`.
  UpdateRuleConfig default_rule;
  // Per-parameter rules by name; every name must be in the layout.
  std::map<std::string, UpdateRuleConfig> rules;
  // Hashed tables' configurations by name; a table not named here gets the
  // defaults. Every name must be a hashed table of the layout.
  std::map<std::string, TableConfig> tables;
  // Counters per row of a hashed table's admission sketch (when admission
  // counts: admit_after > 1).
  uint64_t sketch_width = uint64_t{1} << 20;
  // How long a hashed table remembers an evicted id (for delta exports).
  uint64_t tombstone_retention_ms = uint64_t{24} * 3600 * 1000;
  ApplyMode mode = ApplyMode::kAsync;
  uint32_t num_trainers = 1;  // kSync: gradients summed per step, >= 1
  // kSync: a gradient for a step beyond the block's step + this is refused
  // (InvalidArgument) instead of parked; 0: no limit.
  uint64_t max_steps_ahead = 0;
  // kSync: called with (block, its new step) every time a block's step
  // advances (a full or forced sum applied, InitBlock, RestoreBlock), on the
  // thread that advanced it, with the block's lock held: it must not call
  // into the shard and must not block for long.
  std::function<void(uint32_t block, uint64_t step)> on_step;
  // Threads of the shard's TBB arena for ApplyAsync; 0: TBB's default. If
  // TBB's process-wide worker limit is lower, the shard raises it (with a
  // tbb::global_control that lives as long as the shard).
  int num_threads = 0;
  // Blocks longer than twice this are applied by parallel_for in pieces of
  // about this many elements.
  uint64_t parallel_grain_elements = uint64_t{1} << 16;
  // kAsync: ApplyAsync applies a gradient of a block of at most this many
  // value bytes on the calling thread when nothing of the block is queued
  // (and then what was queued behind it meanwhile) before it returns, and
  // calls back there: a hand-off to a TBB worker costs a wake-up and a
  // context switch, more than the update of a small block. 0: never.
  uint64_t inline_apply_bytes = 0;
};

// A kSync step that ForceOverdueSteps applied without all its gradients.
struct ForcedStep {
  uint32_t block = 0;
  uint64_t step = 0;              // the step that was applied
  std::vector<uint32_t> missing;  // trainers whose gradient never came
};

// Where a block's values sit in the arena.
struct BlockRegion {
  size_t offset = 0;  // from arena_base()
  size_t bytes = 0;
};

// What ReadBlockLocked shows; pointers valid only inside the visitor.
struct BlockView {
  const BlockInfo* info = nullptr;
  DType dtype = DType::kFloat32;
  RuleKind rule = RuleKind::kSgd;
  const void* values = nullptr;
  size_t value_bytes = 0;
  const void* state[2] = {nullptr, nullptr};  // StateSlots(rule) of them
  size_t state_bytes = 0;                     // of each state array
  uint64_t update_count = 0;
  // A hashed table's bucket (IsHashedBlock(*info)): `rows` rows, row i of
  // id ids[i], last updated at updated_ms[i] (unix ms); values and state
  // hold rows * R elements.
  uint64_t rows = 0;
  const uint64_t* ids = nullptr;
  const int64_t* updated_ms = nullptr;
  const uint64_t* versions = nullptr;
  // Its tombstones: ids evicted, and when (unix ms).
  uint64_t evicted = 0;
  const uint64_t* evicted_ids = nullptr;
  const int64_t* evicted_ms = nullptr;
};

// A hashed table on one pserver.
using HashedTableStats = protocol::TableStats;

class Shard {
 public:
  // Validates the options (shard index < N, rule configs, float types for
  // every owned block: integer parameters are Unimplemented), maps and
  // pre-faults the arena. Values start at 0; use InitBlock.
  static Result<std::unique_ptr<Shard>> Create(Layout layout,
                                               ShardOptions options);
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  const Layout& layout() const { return layout_; }
  const ShardOptions& options() const { return options_; }
  uint32_t index() const { return options_.shard_index; }
  // Global ids of the owned blocks, ascending.
  const std::vector<uint32_t>& block_ids() const { return block_ids_; }
  bool Owns(uint32_t block) const;

  // The arena, for one fabric registration. Stable for the shard's life.
  void* arena_base() const { return arena_.base(); }
  size_t arena_bytes() const { return arena_.size(); }
  // InvalidArgument for a block this shard does not own.
  Result<BlockRegion> ValueRegion(uint32_t block) const;

  // Sets a block's values (`bytes` == num_elements * element size), resets
  // its optimizer state and update count (kSync: the block is at step 0 and
  // its partial sum is dropped). Under the block's lock. A bucket of a
  // hashed table instead holds exactly the rows `values` gives with their
  // ids afterwards (protocol/id_rows.h; empty: none), each admitted now
  // with the rule's initial state, and its update count is 0; ids must be
  // distinct and of the bucket, or the bucket is left as it was
  // (InvalidArgument naming the id).
  Status InitBlock(uint32_t block, const void* values, size_t bytes);
  // Copies a consistent snapshot of a block's values into `out`.
  Status ReadValues(uint32_t block, void* out, size_t bytes) const;
  // Runs `visit` under the block's lock (keep it short: applies of that
  // block wait).
  Status ReadBlockLocked(
      uint32_t block, const std::function<void(const BlockView&)>& visit) const;
  // Overwrites values, state and update count under the block's lock (the
  // checkpoint loader's entry point). Sizes must match the block and rule.
  // kSync: the block is at step `update_count` with an empty sum; parked
  // gradients for that step go in, older ones are refused as stale.
  Status RestoreBlock(uint32_t block, const void* values, const void* state0,
                      const void* state1, uint64_t update_count);
  // Number of updates applied to the block (kSync: its current step).
  Result<uint64_t> UpdateCount(uint32_t block) const;

  // Learning rates set while the job runs (shard_rules.cc). Checks every
  // (parameter name -> new learning rate) of `rates` first: NotFound for a
  // name the layout does not have, and protocol::CheckNewLearningRate's
  // refusals (InvalidArgument for a rate that is not finite and >= 0,
  // FailedPrecondition for a rule with the linear-decay schedule), each
  // naming the parameter. Nothing changes unless all pass. Then each
  // parameter's rule takes its new rate under the locks of all its owned
  // blocks, so every later update of any of its blocks uses it (in both
  // modes; an update in progress finishes with the old one).
  // options() keeps the rules the shard was created with; RuleOf is the
  // current one.
  Status CheckLearningRates(const std::map<std::string, double>& rates) const;
  Status SetLearningRates(const std::map<std::string, double>& rates);
  // The rule parameter `param` (an index into layout().params()) applies
  // now.
  UpdateRuleConfig RuleOf(uint32_t param) const;

  // Hashed tables (see above). GatherHashed writes the row of ids[i] to
  // out + i * row bytes (the initial row where none is held) under the
  // bucket's lock; an id of another bucket is InvalidArgument.
  Status GatherHashed(uint32_t block, const uint64_t* ids, uint64_t count,
                      void* out) const;
  // Replaces the bucket's rows (the checkpoint loader's entry point):
  // `rows` rows of ids, update times, values and state arrays; ids must be
  // distinct and of the bucket; and its `evicted` tombstones (ids evicted
  // and when, for delta exports).
  Status RestoreHashed(uint32_t block, uint64_t rows, const uint64_t* ids,
                       const int64_t* updated_ms, const void* values,
                       const void* state0, const void* state1,
                       uint64_t update_count, uint64_t evicted = 0,
                       const uint64_t* evicted_ids = nullptr,
                       const int64_t* evicted_ms = nullptr);
  // Drops rows older than each table's TTL, then, while a table is over
  // its budget, its least recently updated rows; each evicted id is
  // remembered with `now_unix_ms` (a tombstone, shown by ReadBlockLocked)
  // for tombstone_retention_ms. Buckets are swept one at a
  // time under their lock: pushes and reads of other buckets go on.
  // Returns the rows dropped.
  uint64_t EvictHashed(int64_t now_unix_ms);
  std::vector<HashedTableStats> HashedStats() const;

  // Applies (kSync: contributes) one gradient and returns when its bytes
  // are consumed. `deadline` bounds the kSync wait for a later step only.
  // `g.data` must stay valid until the call returns.
  Status Apply(const GradientRef& g, Deadline deadline);

  // Validates `g` now; on error returns it and never calls `done`. On OK,
  // `done` is called exactly once later (see gradient.h) with the apply's
  // result, and `g.data` must stay valid and unchanged until then.
  Status ApplyAsync(const GradientRef& g, ApplyCallback done);

  // kSync: every block that has waited longer than `max_wait` since the
  // first gradient of its open step arrived (or, with none arrived, since a
  // later step's gradient was parked) applies the sum of what arrived (an
  // empty sum when nothing did: the step count still goes up) and opens the
  // next step; parked gradients of it go in. Returns those steps. Async
  // shards return none.
  std::vector<ForcedStep> ForceOverdueSteps(SteadyClock::duration max_wait);
  // kSync: the largest step of any owned block (0 without blocks): where a
  // trainer that (re)joins starts. Blocks are at most one step apart while
  // every trainer waits for its pushes (see max_steps_ahead).
  uint64_t MaxStep() const;

  // Waits until every accepted ApplyAsync has called back (parked kSync
  // gradients count as pending). TimedOut otherwise.
  Status WaitIdle(Deadline deadline);

 private:
  struct Block;
  struct Pending;
  struct Table;

  Shard(Layout layout, ShardOptions options);
  Status Init();
  Result<Block*> Validate(const GradientRef& g) const;
  Result<const Block*> Find(uint32_t block) const;

  // All *Locked methods require b->mu held.
  Status ApplyGradientLocked(Block* b, const GradientRef& g);
  Status ContributeLocked(Block* b, const GradientRef& g);
  Status CheckAheadLocked(const Block* b, const GradientRef& g) const;
  // The block's step went up: wakes waiters, calls on_step.
  void StepAdvancedLocked(Block* b);
  void NoteWaitingLocked(Block* b);
  void ReleaseParkedLocked(Block* b, std::vector<Pending>* released);
  void ResetStepLocked(Block* b, uint64_t update_count,
                       std::vector<Pending>* released);
  template <typename T>
  void ApplyDenseLocked(Block* b, const T* g);
  template <typename T>
  void ApplyRowsLocked(Block* b, const std::vector<uint64_t>& rows,
                       const std::vector<const T*>& grad_rows);
  template <typename T>
  Status ApplySparseLocked(Block* b, const GradientRef& g);
  template <typename T>
  Status ApplyHashedLocked(Block* b, const GradientRef& g);
  Status InitHashed(Block* b, const void* values, size_t bytes);
  // Drops rows of `b` (locked inside) with updated_ms < cutoff; at most
  // `limit` of them. Returns how many.
  uint64_t EvictOlder(Block* b, int64_t cutoff, uint64_t limit, int64_t now_ms);
  template <typename T>
  Status AccumulateLocked(Block* b, const GradientRef& g);
  template <typename T>
  void ApplyAccumulatedLocked(Block* b);

  void Drain(Block* b);
  void Complete(std::vector<Pending>* done);

  Layout layout_;
  ShardOptions options_;
  Arena arena_;
  std::vector<uint32_t> block_ids_;
  std::vector<int32_t> local_of_;  // global id -> index in blocks_, or -1
  std::vector<std::unique_ptr<Block>> blocks_;
  // Each Block points at its parameter's entry. An entry changes only
  // under rules_mu_ and the locks of all the parameter's owned blocks, and
  // is read under either.
  mutable std::mutex rules_mu_;
  std::vector<UpdateRuleConfig> rule_of_param_;
  std::vector<std::unique_ptr<Table>> tables_;  // by param; null: dense
  std::atomic<uint64_t> row_version_{0};

  std::unique_ptr<tbb::global_control> worker_limit_;
  std::unique_ptr<tbb::task_arena> task_arena_;

  std::atomic<bool> shutting_down_{false};
  std::mutex idle_mu_;
  std::condition_variable idle_cv_;
  uint64_t in_flight_ = 0;      // accepted ApplyAsync not yet called back
  uint64_t active_drains_ = 0;  // Drain tasks scheduled or running
};

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_SHARD_H_
