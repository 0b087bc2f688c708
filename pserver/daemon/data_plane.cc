#include "pserver/daemon/data_plane.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>

#include "base/log.h"
#include "base/shared_memory.h"
#include "base/thread_name.h"
#include "pserver/gather_rows.h"
#include "pserver/protocol_types.h"
#include "pserver/sparse_rows.h"

namespace fabps::pserver {

namespace {
// Set while the endpoint's progress thread runs the immediate handler:
// what runs there must not wait for the provider.
thread_local bool on_progress_thread = false;
}  // namespace

// One registered trainer: its peer, credit target and landing slots.
struct DataPlane::Trainer {
  uint32_t index = 0;
  int64_t id = 0;
  transport::PeerId peer = 0;
  transport::RemoteRegion credit;
  SharedMemory landing;  // shared: an shm trainer copies into it directly
  std::unique_ptr<transport::MemoryRegion> landing_mr;  // (destroyed first)
  std::unique_ptr<std::atomic<bool>[]> busy;
};

Result<std::unique_ptr<DataPlane>> DataPlane::Create(
    const DataPlaneOptions& options) {
  if (options.slots_per_trainer < 1 ||
      options.slots_per_trainer > wire::kMaxSlots) {
    return Status::InvalidArgument("--slots-per-trainer must be in 1..256");
  }
  if (options.max_trainers < 1 ||
      options.max_trainers > wire::kMaxTrainerIndex) {
    return Status::InvalidArgument("--max-trainers must be in 1..65535");
  }
  if (options.step_deadline_ms < 1)
    return Status::InvalidArgument("--step-deadline-ms must be >= 1");
  std::unique_ptr<DataPlane> dp(new DataPlane(options));
  transport::FabricOptions fo;
  fo.provider = options.provider;
  fo.interface_address = options.interface_address;
  FABPS_ASSIGN_OR_RETURN(dp->fabric_, transport::OpenFabric(fo));
  FABPS_ASSIGN_OR_RETURN(dp->endpoint_, dp->fabric_->CreateEndpoint(
                                            transport::ProgressMode::kThread));
  dp->scratch_.resize(64);
  FABPS_ASSIGN_OR_RETURN(
      dp->scratch_mr_,
      dp->fabric_->Register(dp->scratch_.data(), dp->scratch_.size()));
  dp->credit_endpoint_ = dp->endpoint_.get();
  DataPlane* raw = dp.get();
  dp->endpoint_->SetImmediateHandler([raw](const transport::ImmediateEvent& e) {
    on_progress_thread = true;
    raw->OnImmediate(e.data);
    on_progress_thread = false;
  });
  return dp;
}

DataPlane::~DataPlane() {
  stopping_ = true;
  // Create may fail before the endpoint exists (a fabric that does not
  // open): nothing was started then.
  if (endpoint_) endpoint_->SetImmediateHandler(nullptr);
  DetachShard();
  // The credits thread posts on the endpoint: it goes first (a handler
  // still running finds retry_stop_ and drops its credit).
  {
    std::lock_guard<std::mutex> l(retry_mu_);
    retry_stop_ = true;
  }
  retry_cv_.notify_all();
  if (retry_thread_.joinable()) retry_thread_.join();
  // Stop the progress thread (and so the handler) before anything it uses.
  endpoint_.reset();
}

void DataPlane::DetachShard() {
  {
    std::lock_guard<std::mutex> l(watch_mu_);
    watch_stop_ = true;
  }
  watch_cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  shard_.store(nullptr);
}

Status DataPlane::AttachShard(Shard* shard) {
  FABPS_ASSIGN_OR_RETURN(
      arena_mr_, fabric_->Register(shard->arena_base(), shard->arena_bytes()));
  // A slot takes the largest owned block, dense, or every row of it with
  // ids and header (parameters that take rows).
  uint64_t max_block = 0;
  const Layout& layout = shard->layout();
  for (uint32_t b : shard->block_ids()) {
    auto r = shard->ValueRegion(b);
    if (r.ok()) max_block = std::max<uint64_t>(max_block, r->bytes);
    const BlockInfo& info = layout.blocks()[b];
    const ParamSpec& param = layout.params()[info.param];
    if (TakesRows(param)) {
      max_block = std::max<uint64_t>(
          max_block,
          protocol::RowsSlotBytesForBlock(info, DTypeSize(param.dtype)));
    }
  }
  const bool sync = shard->options().mode == ApplyMode::kSync;
  if (sync) max_block += protocol::kStepHeaderBytes;
  slot_bytes_ = (std::max<uint64_t>(max_block, 64) + 63) / 64 * 64;
  if (sync) {
    for (uint32_t b : shard->block_ids()) {
      auto step = shard->UpdateCount(b);
      if (!step.ok()) return step.status();
      std::lock_guard<std::mutex> l(step_mu_);
      uint64_t& known = step_of_block_[b];
      known = std::max(known, *step);
    }
  }
  shard_.store(shard);
  if (sync && !watcher_.joinable()) {
    {
      std::lock_guard<std::mutex> l(watch_mu_);
      watch_stop_ = false;
    }
    watcher_ = std::thread([this] {
      SetThreadName("fabps-steps");
      WatchSteps();
    });
  }
  return Status::OK();
}

std::string DataPlane::arena_region() const {
  return arena_mr_ ? arena_mr_->remote().Serialize() : std::string();
}

Result<TrainerRegistration> DataPlane::RegisterTrainer(
    int64_t trainer_id, const std::string& address,
    const std::string& credit_region, uint64_t max_slot_bytes) {
  if (shard_.load() == nullptr) {
    return Status::FailedPrecondition("parameters are not initialized yet");
  }
  FABPS_ASSIGN_OR_RETURN(transport::RemoteRegion credit,
                         transport::RemoteRegion::Parse(credit_region));
  (void)max_slot_bytes;  // slots fit the largest block this pserver owns
  std::unique_lock<std::shared_mutex> l(mu_);
  std::shared_ptr<Trainer> old;
  uint32_t index = static_cast<uint32_t>(trainers_.size());
  for (uint32_t i = 0; i < trainers_.size(); i++) {
    if (trainers_[i] && trainers_[i]->id == trainer_id) {
      old = trainers_[i];
      index = i;
      break;
    }
  }
  const ShardOptions& so = shard_.load()->options();
  if (!old && so.mode == ApplyMode::kSync &&
      trainers_.size() >= so.num_trainers) {
    return Status::ResourceExhausted(
        "sync mode with --num-trainers " + std::to_string(so.num_trainers) +
        ": every trainer place is taken (a restarted trainer rejoins with "
        "its old trainer id)");
  }
  if (!old && trainers_.size() >= options_.max_trainers) {
    return Status::ResourceExhausted("pserver serves its maximum of " +
                                     std::to_string(options_.max_trainers) +
                                     " trainers");
  }
  auto t = std::make_shared<Trainer>();
  t->index = index;
  t->id = trainer_id;
  t->credit = credit;
  if (old) endpoint_->RemovePeer(old->peer);
  FABPS_ASSIGN_OR_RETURN(t->peer, endpoint_->AddPeer(address));
  // Registered with exactly the slots' length (not the page-rounded
  // size()): it goes out in the remote descriptor.
  const size_t landing_bytes = slot_bytes_ * options_.slots_per_trainer;
  FABPS_ASSIGN_OR_RETURN(t->landing, SharedMemory::Create(landing_bytes));
  FABPS_ASSIGN_OR_RETURN(t->landing_mr,
                         fabric_->Register(t->landing.base(), landing_bytes));
  t->busy.reset(new std::atomic<bool>[options_.slots_per_trainer]);
  for (uint32_t s = 0; s < options_.slots_per_trainer; s++) t->busy[s] = false;
  if (index == trainers_.size()) {
    trainers_.push_back(t);
  } else {
    trainers_[index] = t;  // in-flight applies of the old one keep it alive
  }
  FABPS_LOG(INFO) << "trainer " << trainer_id << " registered as index "
                  << index << (old ? " (re-registered)" : "");
  TrainerRegistration reg;
  reg.trainer_index = index;
  reg.landing_region = t->landing_mr->remote().Serialize();
  reg.num_slots = options_.slots_per_trainer;
  reg.slot_bytes = slot_bytes_;
  return reg;
}

void DataPlane::Reject(const std::string& why) {
  rejected_++;
  uint64_t n = reject_logs_++;
  if (n < 20 || (n & (n - 1)) == 0)
    FABPS_LOG(WARNING) << "rejected push: " << why;
}

void DataPlane::OnImmediate(uint64_t data) {
  if (stopping_) return;  // the pserver is exiting: no push is applied
  auto imm = wire::DecodePush(data);
  if (!imm.ok()) return Reject(imm.status().message());
  std::shared_ptr<Trainer> t;
  {
    std::shared_lock<std::shared_mutex> l(mu_);
    if (imm->trainer < trainers_.size()) t = trainers_[imm->trainer];
  }
  if (!t)
    return Reject("unknown trainer index " + std::to_string(imm->trainer));
  if (imm->slot >= options_.slots_per_trainer) {
    Reject("slot " + std::to_string(imm->slot) + " out of range");
    return SendCredit(t, imm->slot, imm->block, Status::Code::kInvalidArgument);
  }
  Shard* shard = shard_.load();
  if (shard == nullptr) {
    // Not serving parameters (yet, or any more: shutting down, e.g. for a
    // re-shard): the trainer's step is lost and it reconnects, as when a
    // pserver dies; not a bad request.
    Reject("block " + std::to_string(imm->block) +
           ": no shard (not initialized, or shutting down)");
    return SendCredit(t, imm->slot, imm->block, Status::Code::kUnavailable);
  }
  auto region = shard->ValueRegion(imm->block);
  if (!region.ok()) {
    Reject("block " + std::to_string(imm->block) + ": " +
           region.status().message());
    return SendCredit(t, imm->slot, imm->block, Status::Code::kInvalidArgument);
  }
  bool expected = false;
  if (!t->busy[imm->slot].compare_exchange_strong(expected, true)) {
    // The trainer wrote into a slot whose apply is still running: its own
    // bookkeeping is broken. Refuse without a credit (it already owes one).
    return Reject("slot " + std::to_string(imm->slot) + " of trainer " +
                  std::to_string(t->id) + " reused before its credit");
  }
  char* slot_data =
      static_cast<char*>(t->landing.base()) + imm->slot * slot_bytes_;
  const bool sync = shard->options().mode == ApplyMode::kSync;
  if (imm->kind != wire::PushKind::kDense || sync) {
    if (imm->kind == wire::PushKind::kRowsRead ||
        (imm->kind == wire::PushKind::kRows && !sync) ||
        (imm->kind == wire::PushKind::kRowsStep && sync)) {
      return OnRows(t, *imm, *shard, slot_data);
    }
    if (imm->kind == wire::PushKind::kDenseStep && sync)
      return OnDenseStep(t, *imm, *shard, slot_data, region->bytes);
    t->busy[imm->slot] = false;
    Reject(std::string("push of trainer ") + std::to_string(t->id) + ": " +
           (sync ? "this pserver runs in sync mode: pushes must name their "
                   "step (SendGrads or SendRows with a step)"
                 : "a push with a step, but this pserver runs in async mode"));
    return SendCredit(t, imm->slot, imm->block,
                      Status::Code::kFailedPrecondition);
  }
  GradientRef g;
  g.block = imm->block;
  g.format = GradientFormat::kDense;
  g.data = slot_data;
  g.bytes = region->bytes;
  Apply(t, imm->slot, *shard, g);
}

void DataPlane::Apply(const std::shared_ptr<Trainer>& t, uint32_t slot,
                      Shard& shard, const GradientRef& g) {
  uint32_t block = g.block;
  size_t bytes = g.bytes;
  const bool sync = shard.options().mode == ApplyMode::kSync;
  const uint64_t step = g.step;
  const auto arrived = std::chrono::steady_clock::now();
  Status s = shard.ApplyAsync(g, [this, t, slot, block, bytes, sync, step,
                                  arrived](const Status& st) {
    if (sync && st.ok()) return CreditWhenApplied(t, slot, block, step, bytes);
    if (st.ok()) {
      applied_++;
      bytes_applied_ += bytes;
      if (options_.apply_seconds != nullptr) {
        options_.apply_seconds->Observe(
            std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                          arrived)
                .count());
      }
    } else {
      Reject("apply of block " + std::to_string(block) + ": " + st.ToString());
    }
    t->busy[slot] = false;
    SendCredit(t, slot, block, st.code());
  });
  if (!s.ok()) {
    t->busy[slot] = false;
    Reject("block " + std::to_string(block) + ": " + s.ToString());
    SendCredit(t, slot, block, s.code());
  }
}

void DataPlane::OnRows(const std::shared_ptr<Trainer>& t,
                       const wire::PushImm& imm, Shard& shard,
                       char* slot_data) {
  const BlockInfo& info = shard.layout().blocks()[imm.block];
  const ParamSpec& param = shard.layout().params()[info.param];
  const size_t esize = DTypeSize(param.dtype);
  const char* what = imm.kind == wire::PushKind::kRows       ? "rows push"
                     : imm.kind == wire::PushKind::kRowsStep ? "sync rows push"
                                                             : "rows read";
  auto refuse = [&](const Status& why) {
    t->busy[imm.slot] = false;
    Reject(std::string(what) + " of trainer " + std::to_string(t->id) + ": " +
           why.ToString());
    SendCredit(t, imm.slot, imm.block, why.code());
  };
  if (!TakesRows(param)) {
    return refuse(Status::InvalidArgument(
        "parameter '" + param.name + "' has rank " +
        std::to_string(param.shape.size()) + ": rows need rank >= 2"));
  }
  auto r =
      protocol::ParseRowsSlot(slot_data, slot_bytes_, imm.kind, info, esize);
  if (!r.ok()) return refuse(r.status());
  if (imm.kind != wire::PushKind::kRowsRead) {
    GradientRef g;
    g.block = imm.block;
    if (imm.kind == wire::PushKind::kRowsStep) {
      g.step = r->step;
      g.trainer = t->index;
    }
    if (r->count == 0) {
      g.format = GradientFormat::kEmpty;  // touched nothing of the block
    } else {
      g.format = GradientFormat::kSparseRows;
      g.data = slot_data + r->sparse_offset;  // count, ids, values
      g.bytes = r->sparse_bytes(info.row_elements * esize);
    }
    return Apply(t, imm.slot, shard, g);
  }
  // A read: the rows go behind the ids in the same slot, under the block's
  // lock; the credit tells the trainer to read them. Done right here on the
  // progress thread (a copy of at most one slot).
  const auto* ids =
      reinterpret_cast<const uint64_t*>(slot_data + r->ids_offset);
  char* out = slot_data + r->values_offset;
  Status gathered;
  Status s;
  if (IsHashedBlock(info)) {
    s = shard.GatherHashed(imm.block, ids, r->count, out);
  } else {
    s = shard.ReadBlockLocked(imm.block, [&](const BlockView& v) {
      gathered = GatherRows(v, ids, r->count, out);
    });
  }
  if (s.ok()) s = gathered;
  if (!s.ok()) return refuse(s);
  rows_read_ += r->count;
  t->busy[imm.slot] = false;
  SendCredit(t, imm.slot, imm.block, Status::Code::kOk);
}

void DataPlane::OnDenseStep(const std::shared_ptr<Trainer>& t,
                            const wire::PushImm& imm, Shard& shard,
                            char* slot_data, size_t block_bytes) {
  auto step = protocol::ParseDenseStepHeader(slot_data, slot_bytes_, imm.block);
  if (!step.ok()) {
    t->busy[imm.slot] = false;
    Reject("sync push of trainer " + std::to_string(t->id) + ": " +
           step.status().message());
    return SendCredit(t, imm.slot, imm.block, step.status().code());
  }
  GradientRef g;
  g.block = imm.block;
  g.step = *step;
  g.trainer = t->index;
  g.format = GradientFormat::kDense;
  g.data = slot_data + protocol::kStepHeaderBytes;
  g.bytes = block_bytes;
  Apply(t, imm.slot, shard, g);
}

void DataPlane::CreditWhenApplied(const std::shared_ptr<Trainer>& t,
                                  uint32_t slot, uint32_t block, uint64_t step,
                                  size_t bytes) {
  {
    std::lock_guard<std::mutex> l(step_mu_);
    if (step_of_block_[block] <= step) {
      held_[block].push_back(HeldCredit{t, slot, step, bytes});
      return;
    }
  }
  applied_++;
  bytes_applied_ += bytes;
  t->busy[slot] = false;
  SendCredit(t, slot, block, Status::Code::kOk);
}

void DataPlane::OnStepApplied(uint32_t block, uint64_t step) {
  std::vector<HeldCredit> ready;
  {
    std::lock_guard<std::mutex> l(step_mu_);
    uint64_t& known = step_of_block_[block];
    known = std::max(known, step);
    auto it = held_.find(block);
    if (it == held_.end()) return;
    auto& list = it->second;
    auto mid = std::partition(list.begin(), list.end(),
                              [&](const auto& c) { return c.step >= known; });
    ready.assign(std::make_move_iterator(mid),
                 std::make_move_iterator(list.end()));
    list.erase(mid, list.end());
  }
  for (const HeldCredit& c : ready) {
    applied_++;
    bytes_applied_ += c.bytes;
    c.trainer->busy[c.slot] = false;
    SendCredit(c.trainer, c.slot, block, Status::Code::kOk);
  }
}

void DataPlane::WatchSteps() {
  const auto deadline = std::chrono::milliseconds(options_.step_deadline_ms);
  const auto period = std::clamp<std::chrono::milliseconds>(
      deadline / 4, std::chrono::milliseconds(5),
      std::chrono::milliseconds(200));
  std::unique_lock<std::mutex> l(watch_mu_);
  while (!watch_cv_.wait_for(l, period, [&] { return watch_stop_; })) {
    Shard* shard = shard_.load();
    if (!shard) continue;
    l.unlock();
    std::vector<ForcedStep> forced = shard->ForceOverdueSteps(deadline);
    // One line per step, however many blocks it spans.
    std::map<uint64_t, std::pair<uint32_t, std::set<uint32_t>>> by_step;
    for (const ForcedStep& f : forced) {
      auto& [blocks, missing] = by_step[f.step];
      blocks++;
      missing.insert(f.missing.begin(), f.missing.end());
    }
    steps_forced_ += forced.size();
    for (const auto& [step, what] : by_step) {
      std::string who;
      for (uint32_t m : what.second)
        who += (who.empty() ? "" : ",") + std::to_string(m);
      FABPS_LOG(WARNING) << "sync step " << step << ": " << what.first
                         << " block(s) applied after the step deadline of "
                         << options_.step_deadline_ms
                         << " ms without the gradients of trainer index(es) "
                         << who;
    }
    l.lock();
  }
}

void DataPlane::SendCredit(const std::shared_ptr<Trainer>& t, uint32_t slot,
                           uint32_t block, Status::Code code) {
  wire::CreditImm c;
  c.pserver = options_.pserver_index;
  c.slot = slot;
  c.code = code;
  c.block = block;
  if (stopping_) return;  // the trainer sees its push time out instead
  const uint64_t word = wire::EncodeCredit(c);
  if (on_progress_thread) {
    // One try: a busy provider is retried by the credits thread.
    Status s = PostCredit(t, word, Deadline::InMs(0));
    if (s.code() != Status::Code::kTimedOut) {
      if (!s.ok())
        FABPS_LOG(WARNING) << "credit to trainer " << t->id << ": "
                           << s.ToString();
      return;
    }
    std::lock_guard<std::mutex> l(retry_mu_);
    if (retry_stop_) return;
    retry_.push_back(DeferredCredit{t, word});
    if (!retry_thread_.joinable()) {
      retry_thread_ = std::thread([this] {
        SetThreadName("fabps-credits");
        RetryCredits();
      });
    }
    retry_cv_.notify_all();
    return;
  }
  // Off the progress thread (an apply worker, a sync step released by
  // another trainer's push): the progress thread posts it. A credit that the
  // worker writes itself slows the trainer's pull that follows it over tcp
  // (docs/decisions/010-credits-posted-from-the-progress-thread.md).
  credit_endpoint_->RunOnProgressThread([this, t, slot, block, code] {
    on_progress_thread = true;
    SendCredit(t, slot, block, code);
    on_progress_thread = false;
  });
}

Status DataPlane::PostCredit(const std::shared_ptr<Trainer>& t, uint64_t word,
                             Deadline deadline) {
  return credit_endpoint_
      ->Write(t->peer, *scratch_mr_, 0, 0, t->credit, 0, word, deadline)
      .status();
}

void DataPlane::RetryCredits() {
  std::unique_lock<std::mutex> l(retry_mu_);
  for (;;) {
    retry_cv_.wait(l, [&] { return retry_stop_ || !retry_.empty(); });
    if (retry_stop_) return;
    std::vector<DeferredCredit> batch;
    batch.swap(retry_);
    l.unlock();
    for (const DeferredCredit& d : batch) {
      if (stopping_) break;
      Status s = PostCredit(d.trainer, d.word, Deadline::InMs(5000));
      if (!s.ok())
        FABPS_LOG(WARNING) << "credit to trainer " << d.trainer->id
                           << " (retried): " << s.ToString();
    }
    l.lock();
  }
}

DataPlaneStats DataPlane::stats() const {
  DataPlaneStats s;
  s.applied = applied_;
  s.rejected = rejected_;
  s.bytes_applied = bytes_applied_;
  s.rows_read = rows_read_;
  s.steps_forced = steps_forced_;
  std::shared_lock<std::shared_mutex> l(mu_);
  s.trainers = static_cast<uint32_t>(trainers_.size());
  return s;
}

}  // namespace fabps::pserver
