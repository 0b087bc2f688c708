// PServerService: the pserver's control plane (thrift/pserver.thrift) over
// a Shard and its DataPlane.
//
// Initialization is a small state machine: uninitialized -> one trainer
// granted (BeginInitParams) -> InitParams builds the shard -> InitBlock sets
// values -> FinishInitParams registers the arena, records the InitConfig
// beside the checkpoints and serves. Who initializes is decided once per job
// (trainer/init_election.h): with a store the store's election, and every
// pserver grants to whoever asks (a new holder takes over from scratch: the
// old holder's partial work is dropped and its later init calls fail); it
// only refuses a second layout (ALREADY_INITIALIZED). Without a store
// pserver 0's grant is the election: exclusive, and lapsing when its holder
// goes quiet for `init_grant_timeout_ms`, so a trainer that dies while
// initializing does not block the job; pservers 1.. grant as with a store.
//
// On start, Recover() brings back a pserver that was initialized before: it
// reads the InitConfig file and loads the newest checkpoint that verifies.
//
// Thread safety: Thrift worker threads call the handlers concurrently.
#ifndef FABPS_PSERVER_DAEMON_PS_SERVICE_H_
#define FABPS_PSERVER_DAEMON_PS_SERVICE_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "pserver/checkpoint.h"
#include "pserver/daemon/data_plane.h"
#include "pserver/rpc/init_config.h"
#include "pserver/shard.h"
#include "thrift_gen/pserver/PServer.h"

namespace fabps::pserver {

struct ServiceOptions {
  uint32_t index = 0;
  uint32_t num_pservers = 1;
  uint64_t block_elements = 0;  // 0: accept the trainers' choice
  std::string checkpoint_dir;   // "" : no checkpoints
  // The store's record of the newest checkpoint, compared before loading.
  RecordedCheckpoint recorded_checkpoint;
  uint32_t keep_checkpoints = 3;
  int apply_threads = 0;
  // ShardOptions::inline_apply_bytes: async pushes of blocks this small are
  // applied on the progress thread that received them.
  uint64_t inline_apply_bytes = 0;
  // ShardOptions::tombstone_retention_ms.
  uint64_t tombstone_retention_ms = uint64_t{24} * 3600 * 1000;
  int64_t init_grant_timeout_ms = 30000;
  // True with a coordination store: the store elects the initializer and
  // no pserver's grant is exclusive.
  bool store_elects_initializer = false;
  // fabps-pserver --mode and --num-trainers (docs/sync.md).
  ApplyMode mode = ApplyMode::kAsync;
  uint32_t num_trainers = 1;
};

class PServerService : public rpc::pserver::PServerIf {
 public:
  PServerService(ServiceOptions options, DataPlane* data_plane);
  ~PServerService() override;

  // Loads the InitConfig and newest good checkpoint when there are; OK
  // with nothing to load too.
  Status Recover();
  // Writes a checkpoint now (periodic saves and shutdown). OK and nothing
  // written when not initialized or no directory is configured.
  Status Checkpoint();
  // The checkpoint the last successful Checkpoint() wrote (path "" before
  // the first), for the daemon to record in the store.
  CheckpointInfo LastWritten();
  // How long the last successful Checkpoint() took, in seconds (0 before
  // the first).
  double LastCheckpointSeconds();
  bool initialized() const { return initialized_.load(); }
  // One eviction sweep of the hashed tables (Shard::EvictHashed at the
  // wall clock's now); rows dropped. 0 before initialization.
  uint64_t EvictHashed();

  rpc::pserver::InitGrantKind::type BeginInitParams(
      int64_t trainer_id) override;
  void InitParams(int64_t trainer_id,
                  const rpc::pserver::InitConfig& config) override;
  void InitBlock(int64_t trainer_id, int32_t block,
                 const std::string& values) override;
  bool FinishInitParams(int64_t trainer_id) override;
  void GetInitConfig(rpc::pserver::InitConfig& out) override;
  void RegisterTrainer(rpc::pserver::Registration& out,
                       const rpc::pserver::TrainerHello& hello) override;
  void SaveModel(std::string& out, const std::string& dir) override;
  void GetStatus(rpc::pserver::PsStatus& out) override;
  // Checks the rates on the shard, writes the InitConfig with them (when
  // there is a checkpoint directory), then sets them on the shard: a
  // pserver that restarts after this returns comes back with them.
  void SetLearningRates(int64_t trainer_id,
                        const std::map<std::string, double>& rates) override;

 private:
  Status BuildShard(const rpc::pserver::InitConfig& config,
                    std::unique_ptr<Shard>* out);
  // Throws PsError unless `trainer_id` holds a live grant. Requires mu_.
  void CheckGrantLocked(int64_t trainer_id);
  std::string InitConfigPath() const;

  const ServiceOptions options_;
  DataPlane* const data_plane_;

  std::mutex mu_;  // init state
  std::unique_ptr<Shard> shard_;
  rpc::pserver::InitConfig config_;
  int64_t grant_holder_ = 0;
  bool granted_ = false;
  int64_t grant_touched_ms_ = 0;
  std::atomic<bool> initialized_{false};

  std::unique_ptr<CheckpointManager> checkpoints_;
  // EvictHashed's log of tables over budget (its caller's thread only).
  int64_t last_budget_log_ms_ = 0;
  std::map<std::string, uint64_t> over_budget_logged_;
  std::mutex ckpt_mu_;
  std::string last_checkpoint_;
  CheckpointInfo last_written_;         // guarded by ckpt_mu_
  double last_checkpoint_seconds_ = 0;  // guarded by ckpt_mu_
  int64_t last_checkpoint_ms_ = 0;
};

// Throws rpc::pserver::PsError carrying `s` (which must not be OK).
[[noreturn]] void ThrowPsError(const Status& s);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_DAEMON_PS_SERVICE_H_
