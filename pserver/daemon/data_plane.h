// DataPlane: the pserver's side of the fabric. It owns the endpoint, the
// registration of the shard arena (trainers RMA-read parameter values from
// it) and one landing region per registered trainer, cut into slots that the
// trainer RMA-writes gradient blocks into. Each write carries immediate data
// (protocol/wire.h) naming trainer, slot and block; the data plane validates
// it, hands the slot to Shard::ApplyAsync, and when the apply is done writes
// a credit (zero bytes with immediate data) back to the trainer, who may
// then reuse the slot. A trainer thus never overwrites a slot that is not yet
// applied, and a push's completion on the trainer means "applied".
// Landing regions and the arena are SharedMemory: on the shm provider a
// trainer maps them and its RMA becomes a memcpy (transport/local_shares.h);
// the immediate data and everything the data plane checks stay the same.
//
// Rows (protocol/slot_codec.h): a push word of kind kRows names a slot holding
// a rows header, row ids and row gradients; it is applied like a dense block
// (Shard's sparse-rows path: lazy, duplicates summed). A word of kind
// kRowsRead names a slot holding a header and row ids; the data plane copies
// those rows of the block (under its lock) behind the ids in the same slot
// and credits it; the trainer then RMA-reads them from its slot. Slots are
// sized to hold every row of the largest block that takes rows.
//
// Sync mode (the shard's ApplyMode::kSync, docs/sync.md): a push is a word
// of kind kDenseStep naming a slot that holds a StepHeader (the step) and
// the dense block, or of kind kRowsStep naming a StepHeader and sparse rows
// (0 rows: the trainer's empty share of the step, GradientFormat::kEmpty);
// the data plane gives the shard the step and the
// trainer's index as its sync contributor, so a sync pserver serves at most
// num_trainers trainers. The credit of such a push is held back until the
// block's step has been applied (OnStepApplied), so a push's completion
// still means "applied, visible to pulls". A watcher thread applies every
// step that waited longer than step_deadline_ms with the gradients that
// arrived (Shard::ForceOverdueSteps), logs it and counts it. Words of kind
// kDense and kRows are refused in sync mode, kDenseStep and kRowsStep in
// async mode; rows reads (kRowsRead) are served in both.
//
// Validation: immediate data, trainer index, slot, block ownership and the
// block's size all come from a peer; anything wrong is counted, logged
// (rate-limited) and answered with an error credit when the sender is known.
// Only the trainer that registered a landing region knows its key, so a
// trainer can write only into its own slots.
//
// Threads: the endpoint's progress thread runs the immediate handler; TBB
// workers run applies and send credits. A small block's apply (the shard's
// inline_apply_bytes) and a rows read run on the progress thread itself,
// and so does their credit: that one is posted without waiting, and when
// the provider is busy (a trainer that stopped reading, a full queue) it
// goes to a thread of its own ("fabps-credits", started when first needed)
// that retries it, so one slow trainer never holds up the thread that
// serves the others. Public methods are thread safe.
#ifndef FABPS_PSERVER_DAEMON_DATA_PLANE_H_
#define FABPS_PSERVER_DAEMON_DATA_PLANE_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "metrics/registry.h"
#include "pserver/protocol_types.h"
#include "pserver/shard.h"
#include "transport/fabric.h"

namespace fabps::pserver {

struct DataPlaneOptions {
  std::string provider = "auto";
  std::string
      interface_address;  // for tcp/verbs/sockets; "" lets the provider pick
  uint32_t pserver_index = 0;
  uint32_t slots_per_trainer = 8;  // 1..256
  uint32_t max_trainers = 256;     // 1..65535
  // Sync mode: how long a step may wait for the gradients of all trainers
  // before it is applied with those that arrived; >= 1.
  int64_t step_deadline_ms = 30000;
  // When set: each applied push's time from its arrival to its credit
  // (async mode: the apply itself and its wait for the block's lock and a
  // TBB thread), in seconds. Must outlive the data plane.
  metrics::Histogram* apply_seconds = nullptr;
};

struct TrainerRegistration {
  uint32_t trainer_index = 0;
  std::string landing_region;  // RemoteRegion bytes
  uint32_t num_slots = 0;
  uint64_t slot_bytes = 0;
};

struct DataPlaneStats {
  uint64_t applied = 0;
  uint64_t rejected = 0;
  uint64_t bytes_applied = 0;
  uint64_t rows_read = 0;     // rows copied out for rows reads
  uint64_t steps_forced = 0;  // sync steps applied after the step deadline
  uint32_t trainers = 0;
};

class DataPlane {
 public:
  static Result<std::unique_ptr<DataPlane>> Create(
      const DataPlaneOptions& options);
  ~DataPlane();

  std::string provider() const { return fabric_->provider(); }
  std::string address() const { return endpoint_->address(); }

  // Starts serving `shard`: registers its arena. `shard` must outlive the
  // data plane (or until Detach). Pushes that arrive before this are refused.
  Status AttachShard(Shard* shard);
  // The arena's remote descriptor (bytes); empty before AttachShard.
  std::string arena_region() const;

  // Registers (or re-registers, after a reconnect: same trainer_id, same
  // index, new address) a trainer. Requires an attached shard.
  Result<TrainerRegistration> RegisterTrainer(int64_t trainer_id,
                                              const std::string& address,
                                              const std::string& credit_region,
                                              uint64_t max_slot_bytes);

  // Stops using the shard (the sync watcher first). Call before the shard
  // is destroyed.
  void DetachShard();

  // The shard's on_step hook (ShardOptions::on_step): block `block` is now
  // at step `step`; credits of sync pushes for earlier steps go out.
  void OnStepApplied(uint32_t block, uint64_t step);

  DataPlaneStats stats() const;

 private:
  struct Trainer;
  explicit DataPlane(const DataPlaneOptions& options) : options_(options) {}
  void OnImmediate(uint64_t data);
  // Queues `g` (in trainer `t`'s `slot`) on the shard; credits when done.
  void Apply(const std::shared_ptr<Trainer>& t, uint32_t slot, Shard& shard,
             const GradientRef& g);
  // A kRows, kRowsStep or kRowsRead word whose trainer, slot and block were
  // checked and whose slot is marked busy.
  void OnRows(const std::shared_ptr<Trainer>& t, const wire::PushImm& imm,
              Shard& shard, char* slot_data);
  // A kDenseStep word: checks the header and applies the block for its step.
  void OnDenseStep(const std::shared_ptr<Trainer>& t, const wire::PushImm& imm,
                   Shard& shard, char* slot_data, size_t block_bytes);
  // Sync: the credit of a consumed gradient, sent once its step applied.
  void CreditWhenApplied(const std::shared_ptr<Trainer>& t, uint32_t slot,
                         uint32_t block, uint64_t step, size_t bytes);
  void WatchSteps();
  void SendCredit(const std::shared_ptr<Trainer>& t, uint32_t slot,
                  uint32_t block, Status::Code code);
  // Posts a credit word, waiting for a busy provider until `deadline`.
  Status PostCredit(const std::shared_ptr<Trainer>& t, uint64_t word,
                    Deadline deadline);
  void RetryCredits();
  void Reject(const std::string& why);

  const DataPlaneOptions options_;
  std::unique_ptr<transport::Fabric> fabric_;
  std::unique_ptr<transport::Endpoint> endpoint_;
  // endpoint_.get(), for credits. Unlike endpoint_ it still points at the
  // endpoint while ~DataPlane destroys it: reset() clears endpoint_ before
  // the endpoint's destructor joins the progress thread, and a credit that
  // thread was already sending would otherwise go through a null pointer.
  transport::Endpoint* credit_endpoint_ = nullptr;
  std::atomic<bool> stopping_{false};  // set by ~DataPlane: drop new pushes
  std::unique_ptr<transport::MemoryRegion> arena_mr_;
  std::vector<char> scratch_;  // source of zero-byte credit writes
  std::unique_ptr<transport::MemoryRegion> scratch_mr_;
  std::atomic<Shard*> shard_{nullptr};
  uint64_t slot_bytes_ = 0;

  mutable std::shared_mutex mu_;
  std::vector<std::shared_ptr<Trainer>> trainers_;  // by trainer index

  std::atomic<uint64_t> applied_{0}, rejected_{0}, bytes_applied_{0},
      rows_read_{0}, steps_forced_{0};

  // Sync mode: each block's applied step and the credits waiting for it.
  struct HeldCredit {
    std::shared_ptr<Trainer> trainer;
    uint32_t slot = 0;
    uint64_t step = 0;
    size_t bytes = 0;
  };
  std::mutex step_mu_;
  std::unordered_map<uint32_t, uint64_t> step_of_block_;        // guarded
  std::unordered_map<uint32_t, std::vector<HeldCredit>> held_;  // guarded
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool watch_stop_ = false;  // guarded by watch_mu_
  std::thread watcher_;
  std::atomic<uint64_t> reject_logs_{0};

  // Credits the progress thread could not post at once, for retry_thread_.
  struct DeferredCredit {
    std::shared_ptr<Trainer> trainer;
    uint64_t word = 0;
  };
  std::mutex retry_mu_;
  std::condition_variable retry_cv_;
  std::vector<DeferredCredit> retry_;  // guarded by retry_mu_
  bool retry_stop_ = false;            // guarded by retry_mu_
  std::thread retry_thread_;           // started under retry_mu_
};

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_DAEMON_DATA_PLANE_H_
