#include "pserver/shard.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <thread>

#include "base/check.h"
#include "base/copy_bytes.h"
#include "base/thread_name.h"
#include "pserver/shard_blocks.h"
#include "pserver/sparse_rows.h"
#include "pserver/tsan_annotations.h"
#include "pserver/update_kernels.h"

namespace fabps::pserver {

namespace {

// Names the calling TBB worker "fabps-apply", once per thread. Called by the
// apply tasks themselves: Drain's task (enqueued to the shard's arena, so
// always a worker; an inline Drain keeps its caller's name) and the pieces of a
// parallel apply that run on a thread other than the one that split the work (a
// caller's own thread keeps its name). A task_scheduler_observer did this
// before; TBB 2021.8 leaked its proxy when observe(false) raced a worker
// leaving the arena (LeakSanitizer, CI).
void NameApplyWorker() {
  thread_local bool named = false;
  if (!named) {
    SetThreadName("fabps-apply");
    named = true;
  }
}

size_t Align64(size_t x) { return (x + 63) & ~size_t{63}; }

// A callable handed to TBB (enqueue, parallel_for bodies) whose fields TSan
// can see arrive: each copy releases its own address after writing it and
// every reader acquires the address it reads from (tsan_annotations.h).
// The destructor releases too, for TBB reusing the memory from another
// thread.
template <typename Fn>
class HandOff {
 public:
  // Constructors acquire `this` first: TBB may reuse memory whose previous
  // occupant another thread read and released.
  explicit HandOff(Fn fn) : fn_((TsanAcquire(this), std::move(fn))) {
    TsanRelease(this);
  }
  HandOff(const HandOff& o) : fn_((TsanAcquire(this), TsanAcquire(&o), o.fn_)) {
    TsanRelease(this);
  }
  HandOff(HandOff&& o) noexcept
      : fn_((TsanAcquire(this), TsanAcquire(&o), std::move(o.fn_))) {
    TsanRelease(this);
  }
  HandOff& operator=(const HandOff&) = delete;
  ~HandOff() { TsanRelease(this); }

  template <typename... Args>
  void operator()(Args&&... args) const {
    TsanAcquire(this);
    fn_(std::forward<Args>(args)...);
    TsanRelease(this);
  }

 private:
  Fn fn_;
};

template <typename Fn>
HandOff<Fn> MakeHandOff(Fn fn) {
  return HandOff<Fn>(std::move(fn));
}

}  // namespace

Shard::Shard(Layout layout, ShardOptions options)
    : layout_(std::move(layout)), options_(std::move(options)) {}

Result<std::unique_ptr<Shard>> Shard::Create(Layout layout,
                                             ShardOptions options) {
  std::unique_ptr<Shard> shard(
      new Shard(std::move(layout), std::move(options)));
  FABPS_RETURN_IF_ERROR(shard->Init());
  return shard;
}

Status Shard::Init() {
  const ShardOptions& o = options_;
  if (o.shard_index >= layout_.num_pservers()) {
    return Status::InvalidArgument(
        "shard index " + std::to_string(o.shard_index) +
        " outside a layout of " + std::to_string(layout_.num_pservers()) +
        " pservers");
  }
  if (o.mode != ApplyMode::kAsync && o.mode != ApplyMode::kSync) {
    return Status::InvalidArgument("unknown apply mode");
  }
  if (o.mode == ApplyMode::kSync &&
      (o.num_trainers < 1 || o.num_trainers > 1u << 16)) {
    return Status::InvalidArgument("sync mode needs 1..65536 trainers");
  }
  if (o.parallel_grain_elements < 1) {
    return Status::InvalidArgument("parallel_grain_elements must be >= 1");
  }
  FABPS_RETURN_IF_ERROR(
      ValidateRuleConfig(o.default_rule).WithContext("default rule"));
  rule_of_param_.assign(layout_.params().size(), o.default_rule);
  for (const auto& [name, rule] : o.rules) {
    FABPS_ASSIGN_OR_RETURN(uint32_t p, layout_.FindParam(name));
    FABPS_RETURN_IF_ERROR(
        ValidateRuleConfig(rule).WithContext("rule of '" + name + "'"));
    rule_of_param_[p] = rule;
  }

  tables_.resize(layout_.params().size());
  for (uint32_t p = 0; p < layout_.params().size(); ++p) {
    const ParamSpec& spec = layout_.params()[p];
    if (!IsHashed(spec)) continue;
    if (o.mode == ApplyMode::kSync) {
      return Status::Unimplemented("hashed table '" + spec.name +
                                   "': hashed tables run in async mode only");
    }
    auto t = std::make_unique<Table>();
    t->spec = &spec;
    t->row_bytes = RowElements(spec) * DTypeSize(spec.dtype);
    t->slots = StateSlots(rule_of_param_[p].kind);
    tables_[p] = std::move(t);
  }
  for (const auto& [name, config] : o.tables) {
    FABPS_ASSIGN_OR_RETURN(uint32_t p, layout_.FindParam(name));
    if (!tables_[p]) {
      return Status::InvalidArgument("table configuration for '" + name +
                                     "', which is not a hashed table");
    }
    FABPS_RETURN_IF_ERROR(protocol::ValidateTableConfig(config).WithContext(
        "table '" + name + "'"));
    tables_[p]->config = config;
  }
  for (auto& t : tables_) {
    if (t && t->config.admit_after > 1)
      t->sketch = std::make_unique<CountSketch>(o.sketch_width);
  }

  block_ids_ = layout_.BlocksOf(o.shard_index);
  local_of_.assign(layout_.num_blocks(), -1);
  // Offsets first (values, then state, then sums), one mmap after.
  size_t off = 0;
  for (uint32_t id : block_ids_) {
    const BlockInfo& info = layout_.blocks()[id];
    const ParamSpec& spec = layout_.params()[info.param];
    if (!IsFloatDType(spec.dtype)) {
      return Status::Unimplemented("parameter '" + spec.name + "' has type " +
                                   DTypeName(spec.dtype) +
                                   "; update rules exist for float32 and "
                                   "float64 only");
    }
    auto b = std::make_unique<Block>();
    b->info = &info;
    b->dtype = spec.dtype;
    b->elem_size = DTypeSize(spec.dtype);
    b->rule = &rule_of_param_[info.param];
    b->slots = StateSlots(b->rule->kind);
    if (IsHashedBlock(info)) {
      b->table = tables_[info.param].get();
      b->table->buckets.push_back(b.get());
      b->hashed =
          std::make_unique<HashedRows>(b->table->row_bytes, b->table->slots);
    }
    b->value_bytes = b->hashed ? 0 : info.num_elements * b->elem_size;
    b->value_offset = off;
    off = Align64(off + b->value_bytes);
    local_of_[id] = static_cast<int32_t>(blocks_.size());
    blocks_.push_back(std::move(b));
  }
  std::vector<size_t> state_off[2], accum_off;
  for (auto& b : blocks_) {
    for (int k = 0; k < 2; ++k) {
      state_off[k].push_back(off);
      if (k < b->slots) off = Align64(off + b->value_bytes);
    }
  }
  if (o.mode == ApplyMode::kSync) {
    for (auto& b : blocks_) {
      accum_off.push_back(off);
      off = Align64(off + b->value_bytes);
    }
  }
  FABPS_ASSIGN_OR_RETURN(arena_, Arena::Create(off));
  char* base = static_cast<char*>(arena_.base());
  for (size_t i = 0; i < blocks_.size(); ++i) {
    Block* b = blocks_[i].get();
    b->values = base + b->value_offset;
    if (b->hashed) continue;
    for (int k = 0; k < b->slots; ++k) b->state[k] = base + state_off[k][i];
    if (b->rule->kind == RuleKind::kAdaGrad && b->rule->adagrad_initial != 0) {
      Fill(b->dtype, b->state[0], b->info->num_elements,
           b->rule->adagrad_initial);
    }
    if (o.mode == ApplyMode::kSync) {
      b->accum = base + accum_off[i];
      b->contributed.assign(o.num_trainers, 0);
      b->touched.assign(b->info->num_rows, 0);
    }
  }

  int threads =
      o.num_threads > 0 ? o.num_threads : tbb::info::default_concurrency();
  size_t limit = tbb::global_control::active_value(
      tbb::global_control::max_allowed_parallelism);
  // TBB caps its workers at (limit - 1); enqueued tasks need `threads`.
  if (static_cast<size_t>(threads) + 1 > limit) {
    worker_limit_ = std::make_unique<tbb::global_control>(
        tbb::global_control::max_allowed_parallelism, threads + 1);
  }
  task_arena_ =
      std::make_unique<tbb::task_arena>(threads, /*reserved_for_masters=*/0);
  return Status::OK();
}

Shard::~Shard() {
  shutting_down_.store(true);
  std::vector<Pending> cancelled;
  for (auto& b : blocks_) {
    std::lock_guard<std::mutex> lock(b->mu);
    for (Pending& p : b->parked) {
      p.status = Status::Cancelled("shard shutting down before step " +
                                   std::to_string(p.g.step) + " of block " +
                                   std::to_string(b->info->id) + " opened");
      cancelled.push_back(std::move(p));
    }
    b->parked.clear();
    b->step_cv.notify_all();
  }
  Complete(&cancelled);
  std::unique_lock<std::mutex> lock(idle_mu_);
  idle_cv_.wait(lock, [&] { return in_flight_ == 0 && active_drains_ == 0; });
}

bool Shard::Owns(uint32_t block) const {
  return block < local_of_.size() && local_of_[block] >= 0;
}

Result<const Shard::Block*> Shard::Find(uint32_t block) const {
  if (block >= local_of_.size()) {
    return Status::InvalidArgument(
        "block id " + std::to_string(block) + " outside the layout's " +
        std::to_string(local_of_.size()) + " blocks");
  }
  if (local_of_[block] < 0) {
    return Status::InvalidArgument(
        "block " + std::to_string(block) + " belongs to pserver " +
        std::to_string(layout_.blocks()[block].pserver) + ", not " +
        std::to_string(options_.shard_index));
  }
  return static_cast<const Block*>(blocks_[local_of_[block]].get());
}

Result<BlockRegion> Shard::ValueRegion(uint32_t block) const {
  FABPS_ASSIGN_OR_RETURN(const Block* b, Find(block));
  return BlockRegion{b->value_offset, b->value_bytes};
}

Status Shard::InitBlock(uint32_t block, const void* values, size_t bytes) {
  FABPS_ASSIGN_OR_RETURN(const Block* cb, Find(block));
  Block* b = const_cast<Block*>(cb);
  if (b->hashed) return InitHashed(b, values, bytes);
  if (values == nullptr || bytes != b->value_bytes) {
    return Status::InvalidArgument("init of block " + std::to_string(block) +
                                   ": " + std::to_string(bytes) +
                                   " bytes, expected " +
                                   std::to_string(b->value_bytes));
  }
  std::vector<Pending> released;
  {
    std::lock_guard<std::mutex> lock(b->mu);
    std::memcpy(b->values, values, bytes);
    for (int k = 0; k < b->slots; ++k) std::memset(b->state[k], 0, bytes);
    if (b->rule->kind == RuleKind::kAdaGrad) {
      Fill(b->dtype, b->state[0], b->info->num_elements,
           b->rule->adagrad_initial);
    }
    ResetStepLocked(b, 0, &released);
  }
  Complete(&released);
  return Status::OK();
}

void Shard::ResetStepLocked(Block* b, uint64_t update_count,
                            std::vector<Pending>* released) {
  b->update_count = update_count;
  b->contributors = 0;
  std::fill(b->contributed.begin(), b->contributed.end(), 0);
  std::fill(b->touched.begin(), b->touched.end(), 0);
  b->any_dense = false;
  b->accum_zero = false;
  StepAdvancedLocked(b);
  // Parked gradients of the step that is now open go in; older ones are
  // refused as stale.
  ReleaseParkedLocked(b, released);
}

Status Shard::ReadValues(uint32_t block, void* out, size_t bytes) const {
  FABPS_ASSIGN_OR_RETURN(const Block* b, Find(block));
  if (b->hashed) {
    return Status::InvalidArgument("block " + std::to_string(block) +
                                   " is a bucket of hashed table '" +
                                   b->table->spec->name + "': rows only");
  }
  if (out == nullptr || bytes != b->value_bytes) {
    return Status::InvalidArgument("read of block " + std::to_string(block) +
                                   ": " + std::to_string(bytes) +
                                   " bytes, block has " +
                                   std::to_string(b->value_bytes));
  }
  std::lock_guard<std::mutex> lock(b->mu);
  std::memcpy(out, b->values, bytes);
  return Status::OK();
}

Status Shard::ReadBlockLocked(
    uint32_t block, const std::function<void(const BlockView&)>& visit) const {
  FABPS_ASSIGN_OR_RETURN(const Block* b, Find(block));
  std::lock_guard<std::mutex> lock(b->mu);
  BlockView v;
  v.info = b->info;
  v.dtype = b->dtype;
  v.rule = b->rule->kind;
  v.values = b->values;
  v.value_bytes = b->value_bytes;
  v.state[0] = b->state[0];
  v.state[1] = b->state[1];
  v.state_bytes = b->value_bytes;
  v.update_count = b->update_count;
  if (b->hashed) {
    const HashedRows& h = *b->hashed;
    v.rows = h.size();
    v.ids = h.ids();
    v.updated_ms = h.updated_ms();
    v.versions = h.versions();
    v.evicted = h.tombstones();
    v.evicted_ids = h.tombstone_ids();
    v.evicted_ms = h.tombstone_ms();
    v.values = h.values_data();
    v.value_bytes = h.size() * b->table->row_bytes;
    for (int k = 0; k < b->slots; ++k) v.state[k] = h.state_data(k);
    v.state_bytes = v.value_bytes;
  }
  visit(v);
  return Status::OK();
}

Status Shard::RestoreBlock(uint32_t block, const void* values,
                           const void* state0, const void* state1,
                           uint64_t update_count) {
  FABPS_ASSIGN_OR_RETURN(const Block* cb, Find(block));
  Block* b = const_cast<Block*>(cb);
  if (b->hashed) {
    return Status::InvalidArgument("restore of block " + std::to_string(block) +
                                   ": a hashed bucket (RestoreHashed)");
  }
  const void* state[2] = {state0, state1};
  if (values == nullptr) return Status::InvalidArgument("restore: null values");
  for (int k = 0; k < b->slots; ++k) {
    if (state[k] == nullptr) {
      return Status::InvalidArgument("restore of block " +
                                     std::to_string(block) +
                                     ": missing optimizer state");
    }
  }
  std::vector<Pending> released;
  {
    std::lock_guard<std::mutex> lock(b->mu);
    std::memcpy(b->values, values, b->value_bytes);
    for (int k = 0; k < b->slots; ++k) {
      std::memcpy(b->state[k], state[k], b->value_bytes);
    }
    ResetStepLocked(b, update_count, &released);
  }
  Complete(&released);
  return Status::OK();
}

Result<uint64_t> Shard::UpdateCount(uint32_t block) const {
  FABPS_ASSIGN_OR_RETURN(const Block* b, Find(block));
  std::lock_guard<std::mutex> lock(b->mu);
  return b->update_count;
}

Result<Shard::Block*> Shard::Validate(const GradientRef& g) const {
  FABPS_ASSIGN_OR_RETURN(const Block* b, Find(g.block));
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("gradient for block " +
                                   std::to_string(g.block) + ": " + why);
  };
  if (g.format == GradientFormat::kEmpty) {
    if (options_.mode != ApplyMode::kSync)
      return bad("an empty gradient only completes a sync step");
  } else if (g.data == nullptr) {
    return bad("null data");
  } else if (g.format == GradientFormat::kDense) {
    if (b->hashed) {
      return bad("a bucket of hashed table '" + b->table->spec->name +
                 "' takes rows only");
    }
    if (g.bytes != b->value_bytes) {
      return bad(std::to_string(g.bytes) + " bytes, expected " +
                 std::to_string(b->value_bytes));
    }
    if (reinterpret_cast<uintptr_t>(g.data) % b->elem_size != 0) {
      return bad("data not aligned to its element size");
    }
  } else if (g.format == GradientFormat::kSparseRows) {
    FABPS_RETURN_IF_ERROR(
        ParseSparseRows(g.data, g.bytes, *b->info, b->elem_size).status());
  } else {
    return bad("unknown format " +
               std::to_string(static_cast<uint32_t>(g.format)));
  }
  if (options_.mode == ApplyMode::kSync && g.trainer >= options_.num_trainers) {
    return bad("trainer " + std::to_string(g.trainer) + " outside [0, " +
               std::to_string(options_.num_trainers) + ")");
  }
  return const_cast<Block*>(b);
}

template <typename T>
void Shard::ApplyDenseLocked(Block* b, const T* g) {
  const size_t n = b->info->num_elements;
  const UpdateRuleConfig& rule = *b->rule;
  T* w = reinterpret_cast<T*>(b->values);
  T* s0 = reinterpret_cast<T*>(b->state[0]);
  T* s1 = reinterpret_cast<T*>(b->state[1]);
  const size_t grain = options_.parallel_grain_elements;
  const bool split = n >= 2 * grain;
  const std::thread::id splitter = std::this_thread::get_id();
  double norm = 0;
  if (rule.clip_norm > 0) {
    if (split) {
      // Fixed pieces summed in order: the norm (and so the update) does not
      // depend on how TBB schedules the pieces.
      size_t pieces = (n + grain - 1) / grain;
      std::vector<double> partial(pieces);
      TsanRelease(&b->fork);
      tbb::this_task_arena::isolate([&] {
        tbb::parallel_for(size_t{0}, pieces, MakeHandOff([&, b](size_t i) {
                            TsanAcquire(&b->fork);
                            if (std::this_thread::get_id() != splitter) {
                              NameApplyWorker();
                            }
                            size_t lo = i * grain, hi = std::min(n, lo + grain);
                            partial[i] = ClampedSumSquares(g + lo, hi - lo,
                                                           rule.clip_value);
                            TsanRelease(&b->join);
                          }));
      });
      TsanAcquire(&b->join);
      for (double x : partial) norm += x;
    } else {
      norm = ClampedSumSquares(g, n, rule.clip_value);
    }
    norm = std::sqrt(norm);
  }
  const uint64_t t = ++b->update_count;
  const StepScalars s = PrepareStep(rule, t, norm);
  if (!split) {
    ApplyRule<T>(rule.kind, s, w, s0, s1, g, n);
    return;
  }
  // The pieces run on threads that do not hold the block lock: the fork
  // and join annotations carry the lock's ordering to them and back.
  TsanRelease(&b->fork);
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(tbb::blocked_range<size_t>(0, n, grain),
                      MakeHandOff([&, b](const tbb::blocked_range<size_t>& r) {
                        TsanAcquire(&b->fork);
                        if (std::this_thread::get_id() != splitter) {
                          NameApplyWorker();
                        }
                        size_t lo = r.begin();
                        ApplyRule<T>(rule.kind, s, w + lo,
                                     s0 ? s0 + lo : nullptr,
                                     s1 ? s1 + lo : nullptr, g + lo, r.size());
                        TsanRelease(&b->join);
                      }));
  });
  TsanAcquire(&b->join);
}

template <typename T>
void Shard::ApplyRowsLocked(Block* b, const std::vector<uint64_t>& rows,
                            const std::vector<const T*>& grad_rows) {
  const size_t r = b->info->row_elements;
  const UpdateRuleConfig& rule = *b->rule;
  double norm = 0;
  if (rule.clip_norm > 0) {
    for (const T* g : grad_rows)
      norm += ClampedSumSquares(g, r, rule.clip_value);
    norm = std::sqrt(norm);
  }
  const uint64_t t = ++b->update_count;
  const StepScalars s = PrepareStep(rule, t, norm);
  T* w = reinterpret_cast<T*>(b->values);
  T* s0 = reinterpret_cast<T*>(b->state[0]);
  T* s1 = reinterpret_cast<T*>(b->state[1]);
  for (size_t i = 0; i < rows.size(); ++i) {
    size_t off = rows[i] * r;
    ApplyRule<T>(rule.kind, s, w + off, s0 ? s0 + off : nullptr,
                 s1 ? s1 + off : nullptr, grad_rows[i], r);
  }
}

template <typename T>
Status Shard::ApplySparseLocked(Block* b, const GradientRef& g) {
  // Parsed again: the slot's bytes are only trusted as read now.
  FABPS_ASSIGN_OR_RETURN(
      SparseRowsView view,
      ParseSparseRows(g.data, g.bytes, *b->info, b->elem_size));
  thread_local std::vector<uint64_t> rows;
  thread_local std::vector<T> summed;
  FABPS_RETURN_IF_ERROR(SumSparseRows<T>(view, *b->info, &rows, &summed));
  std::vector<const T*> grad_rows(rows.size());
  const size_t r = b->info->row_elements;
  for (size_t i = 0; i < rows.size(); ++i) grad_rows[i] = summed.data() + i * r;
  ApplyRowsLocked<T>(b, rows, grad_rows);
  return Status::OK();
}

Status Shard::ApplyGradientLocked(Block* b, const GradientRef& g) {
  const bool f32 = b->dtype == DType::kFloat32;
  if (g.format == GradientFormat::kDense) {
    if (f32) {
      ApplyDenseLocked<float>(b, static_cast<const float*>(g.data));
    } else {
      ApplyDenseLocked<double>(b, static_cast<const double*>(g.data));
    }
    return Status::OK();
  }
  if (b->hashed) {
    return f32 ? ApplyHashedLocked<float>(b, g)
               : ApplyHashedLocked<double>(b, g);
  }
  return f32 ? ApplySparseLocked<float>(b, g) : ApplySparseLocked<double>(b, g);
}

template <typename T>
Status Shard::AccumulateLocked(Block* b, const GradientRef& g) {
  T* acc = reinterpret_cast<T*>(b->accum);
  const size_t n = b->info->num_elements;
  if (g.format == GradientFormat::kDense) {
    if (b->contributors == 0) {
      CopyBytes(acc, g.data, b->value_bytes);
    } else {
      AddInto<T>(acc, static_cast<const T*>(g.data), n);
    }
    b->any_dense = true;
    b->accum_zero = false;
    return Status::OK();
  }
  // A sparse or empty share: the sum starts from zeros.
  if (b->contributors == 0 && !b->accum_zero) {
    std::memset(acc, 0, b->value_bytes);
    b->accum_zero = true;
  }
  if (g.format == GradientFormat::kEmpty) return Status::OK();
  FABPS_ASSIGN_OR_RETURN(
      SparseRowsView view,
      ParseSparseRows(g.data, g.bytes, *b->info, b->elem_size));
  thread_local std::vector<uint64_t> rows;
  thread_local std::vector<T> summed;
  FABPS_RETURN_IF_ERROR(SumSparseRows<T>(view, *b->info, &rows, &summed));
  const size_t r = b->info->row_elements;
  for (size_t i = 0; i < rows.size(); ++i) {
    AddInto<T>(acc + rows[i] * r, summed.data() + i * r, r);
    b->touched[rows[i]] = 1;
  }
  b->accum_zero = false;
  return Status::OK();
}

template <typename T>
void Shard::ApplyAccumulatedLocked(Block* b) {
  T* acc = reinterpret_cast<T*>(b->accum);
  if (b->any_dense) {
    ApplyDenseLocked<T>(b, acc);
  } else {
    const size_t r = b->info->row_elements;
    std::vector<uint64_t> rows;
    std::vector<const T*> grad_rows;
    for (uint64_t row = 0; row < b->info->num_rows; ++row) {
      if (!b->touched[row]) continue;
      rows.push_back(row);
      grad_rows.push_back(acc + row * r);
    }
    ApplyRowsLocked<T>(b, rows, grad_rows);
    // Only the touched rows hold sums: zero them so that the next sparse
    // step needs no full memset.
    for (uint64_t row : rows) {
      std::memset(acc + row * r, 0, r * sizeof(T));
      b->touched[row] = 0;
    }
    b->accum_zero = true;
  }
  b->any_dense = false;
  b->contributors = 0;
  std::fill(b->contributed.begin(), b->contributed.end(), 0);
}

void Shard::StepAdvancedLocked(Block* b) {
  b->waiting = false;
  b->step_cv.notify_all();
  if (options_.on_step) options_.on_step(b->info->id, b->update_count);
}

void Shard::NoteWaitingLocked(Block* b) {
  if (b->waiting) return;
  b->waiting = true;
  b->waiting_since = SteadyClock::now();
}

Status Shard::CheckAheadLocked(const Block* b, const GradientRef& g) const {
  if (options_.max_steps_ahead == 0 ||
      g.step <= b->update_count + options_.max_steps_ahead) {
    return Status::OK();
  }
  return Status::InvalidArgument(
      "gradient for block " + std::to_string(g.block) + " step " +
      std::to_string(g.step) + " from trainer " + std::to_string(g.trainer) +
      " is too far ahead: the block is at step " +
      std::to_string(b->update_count) + " and takes at most " +
      std::to_string(options_.max_steps_ahead) + " step(s) ahead");
}

Status Shard::ContributeLocked(Block* b, const GradientRef& g) {
  if (g.step < b->update_count) {
    return Status::FailedPrecondition(
        "gradient for block " + std::to_string(g.block) + " step " +
        std::to_string(g.step) + " from trainer " + std::to_string(g.trainer) +
        " is stale: the block is at step " + std::to_string(b->update_count));
  }
  FABPS_CHECK(g.step == b->update_count);
  if (b->contributed[g.trainer]) {
    return Status::AlreadyExists(
        "trainer " + std::to_string(g.trainer) + " already sent step " +
        std::to_string(g.step) + " of block " + std::to_string(g.block));
  }
  const bool f32 = b->dtype == DType::kFloat32;
  FABPS_RETURN_IF_ERROR(f32 ? AccumulateLocked<float>(b, g)
                            : AccumulateLocked<double>(b, g));
  b->contributed[g.trainer] = 1;
  NoteWaitingLocked(b);
  if (++b->contributors == options_.num_trainers) {
    if (f32) {
      ApplyAccumulatedLocked<float>(b);
    } else {
      ApplyAccumulatedLocked<double>(b);
    }
    StepAdvancedLocked(b);
  }
  return Status::OK();
}

std::vector<ForcedStep> Shard::ForceOverdueSteps(
    SteadyClock::duration max_wait) {
  std::vector<ForcedStep> forced;
  if (options_.mode != ApplyMode::kSync) return forced;
  for (auto& bp : blocks_) {
    Block* b = bp.get();
    std::vector<Pending> released;
    {
      std::lock_guard<std::mutex> lock(b->mu);
      if (b->contributors == 0 && b->parked.empty()) continue;
      if (!b->waiting) {
        NoteWaitingLocked(b);
        continue;
      }
      if (SteadyClock::now() - b->waiting_since < max_wait) continue;
      ForcedStep f;
      f.block = b->info->id;
      f.step = b->update_count;
      for (uint32_t t = 0; t < options_.num_trainers; ++t) {
        if (!b->contributed[t]) f.missing.push_back(t);
      }
      if (b->contributors > 0) {
        if (b->dtype == DType::kFloat32) {
          ApplyAccumulatedLocked<float>(b);
        } else {
          ApplyAccumulatedLocked<double>(b);
        }
      } else {
        // Nothing arrived: an empty step, so that the parked gradients of
        // the next one can go in. The sum buffer is left as it is.
        ++b->update_count;
      }
      StepAdvancedLocked(b);
      ReleaseParkedLocked(b, &released);
      forced.push_back(std::move(f));
    }
    Complete(&released);
  }
  return forced;
}

uint64_t Shard::MaxStep() const {
  uint64_t step = 0;
  for (const auto& b : blocks_) {
    std::lock_guard<std::mutex> lock(b->mu);
    step = std::max(step, b->update_count);
  }
  return step;
}

void Shard::ReleaseParkedLocked(Block* b, std::vector<Pending>* released) {
  for (;;) {
    auto it = std::find_if(
        b->parked.begin(), b->parked.end(),
        [&](const Pending& p) { return p.g.step <= b->update_count; });
    if (it == b->parked.end()) return;
    Pending p = std::move(*it);
    b->parked.erase(it);
    p.status = ContributeLocked(b, p.g);
    released->push_back(std::move(p));
  }
}

Status Shard::Apply(const GradientRef& g, Deadline deadline) {
  FABPS_ASSIGN_OR_RETURN(Block * b, Validate(g));
  std::unique_lock<std::mutex> lock(b->mu);
  if (options_.mode == ApplyMode::kAsync) return ApplyGradientLocked(b, g);
  FABPS_RETURN_IF_ERROR(CheckAheadLocked(b, g));
  while (g.step > b->update_count) {
    if (shutting_down_.load()) return Status::Cancelled("shard shutting down");
    if (deadline.time() == SteadyClock::time_point::max()) {
      b->step_cv.wait(lock);
    } else if (b->step_cv.wait_until(lock, deadline.time()) ==
                   std::cv_status::timeout &&
               g.step > b->update_count) {
      return Status::TimedOut(
          "block " + std::to_string(g.block) + " is still at step " +
          std::to_string(b->update_count) + "; gradient is for step " +
          std::to_string(g.step));
    }
  }
  std::vector<Pending> released;
  Status st = ContributeLocked(b, g);
  ReleaseParkedLocked(b, &released);
  lock.unlock();
  Complete(&released);
  return st;
}

Status Shard::ApplyAsync(const GradientRef& g, ApplyCallback done) {
  FABPS_ASSIGN_OR_RETURN(Block * b, Validate(g));
  if (!done) return Status::InvalidArgument("ApplyAsync needs a callback");
  {
    std::lock_guard<std::mutex> lock(idle_mu_);
    ++in_flight_;
  }
  bool start = false;
  {
    std::lock_guard<std::mutex> lock(b->queue_mu);
    b->queue.push_back(Pending{g, std::move(done), Status::OK()});
    if (!b->draining) {
      b->draining = true;
      start = true;
    }
  }
  if (start) {
    {
      std::lock_guard<std::mutex> lock(idle_mu_);
      ++active_drains_;
    }
    if (options_.mode == ApplyMode::kAsync &&
        b->value_bytes <= options_.inline_apply_bytes) {
      Drain(b);  // small: cheaper here than a worker's wake-up
    } else {
      task_arena_->enqueue(MakeHandOff([this, b] {
        NameApplyWorker();
        Drain(b);
      }));
    }
  }
  return Status::OK();
}

void Shard::Drain(Block* b) {
  for (;;) {
    Pending p;
    {
      std::lock_guard<std::mutex> lock(b->queue_mu);
      if (b->queue.empty()) {
        b->draining = false;
        break;
      }
      p = std::move(b->queue.front());
      b->queue.pop_front();
    }
    std::vector<Pending> done;
    {
      std::lock_guard<std::mutex> lock(b->mu);
      if (options_.mode == ApplyMode::kAsync) {
        p.status = ApplyGradientLocked(b, p.g);
        done.push_back(std::move(p));
      } else if (p.g.step > b->update_count) {
        Status ahead = CheckAheadLocked(b, p.g);
        if (!ahead.ok()) {
          p.status = ahead;
          done.push_back(std::move(p));
        } else if (shutting_down_.load()) {
          p.status = Status::Cancelled("shard shutting down");
          done.push_back(std::move(p));
        } else {
          NoteWaitingLocked(b);
          b->parked.push_back(std::move(p));
        }
      } else {
        p.status = ContributeLocked(b, p.g);
        done.push_back(std::move(p));
        ReleaseParkedLocked(b, &done);
      }
    }
    Complete(&done);
  }
  // Last touch of the shard: the destructor may run as soon as this unlocks.
  std::lock_guard<std::mutex> lock(idle_mu_);
  --active_drains_;
  idle_cv_.notify_all();
}

void Shard::Complete(std::vector<Pending>* done) {
  if (done->empty()) return;
  for (Pending& p : *done) p.done(p.status);
  std::lock_guard<std::mutex> lock(idle_mu_);
  in_flight_ -= done->size();
  idle_cv_.notify_all();
}

Status Shard::WaitIdle(Deadline deadline) {
  std::unique_lock<std::mutex> lock(idle_mu_);
  auto idle = [&] { return in_flight_ == 0 && active_drains_ == 0; };
  if (deadline.time() == SteadyClock::time_point::max()) {
    idle_cv_.wait(lock, idle);
    return Status::OK();
  }
  if (!idle_cv_.wait_until(lock, deadline.time(), idle)) {
    return Status::TimedOut(std::to_string(in_flight_) +
                            " gradients still pending on shard " +
                            std::to_string(options_.shard_index));
  }
  return Status::OK();
}

}  // namespace fabps::pserver
