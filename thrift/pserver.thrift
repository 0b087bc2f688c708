// The pserver's control-plane service. Bulk data never goes here: gradients
// arrive by RMA write into per-trainer landing slots and parameters leave by
// RMA read from the shard arena (docs/formats/wire.md: the immediate-data
// encoding). This service sets that up: initialization, trainer
// registration (fabric addresses and remote memory descriptors), saving,
// status. Served by fabps-pserver (TNonblockingServer, framed binary).
// A job with a token: every connection first does the fabps.Auth handshake
// of auth.thrift. Bytes this IDL cannot describe (InitConfig.layout) are
// specified in docs/formats/layout.md.

namespace cpp fabps.rpc.pserver
namespace py fabps_thrift.pserver

enum PsErrorCode {
  INVALID_ARGUMENT = 1,
  NOT_FOUND = 2,
  CORRUPTION = 3,
  FAILED_PRECONDITION = 4,  // e.g. not initialized yet, or another trainer initializes
  UNAVAILABLE = 5,
  RESOURCE_EXHAUSTED = 6,   // e.g. no room for another trainer
  INTERNAL = 7,
  ALREADY_EXISTS = 8,
}

exception PsError {
  1: PsErrorCode code,
  2: string message,
}

// Mirrors pserver::UpdateRuleConfig (pserver/update_rule.h), whose
// defaults these are (and the C API's, trainer/fabps_c.h): a client that
// leaves a field out gets the same rule from every language. Validated by
// the pserver (ValidateRuleConfig): finite numbers, learning rates, clips and
// decay >= 0, momentum and betas in [0, 1), epsilon > 0, decay_steps >= 1
// with schedule 1; INVALID_ARGUMENT naming the field otherwise.
struct UpdateRule {
  1: i32 kind = 0,                    // RuleKind: 0 sgd, 1 momentum, 2 nesterov, 3 adam, 4 adagrad
  2: double learning_rate = 0.01,
  3: i32 schedule = 0,                // 0 constant, 1 linear decay
  4: double final_learning_rate = 0.0,  // schedule 1 only
  5: i64 decay_steps = 0,             // schedule 1 only; >= 1
  6: double momentum = 0.9,           // momentum, nesterov
  7: double beta1 = 0.9,              // adam
  8: double beta2 = 0.999,            // adam
  9: double epsilon = 1e-8,           // adam, adagrad
  10: double adagrad_initial = 0.0,   // adagrad: start value of s
  11: double weight_decay = 0.0,      // 0: off
  12: double clip_value = 0.0,        // 0: off
  13: double clip_norm = 0.0,         // 0: off
}

// Mirrors protocol::TableConfig (protocol/hashed_table.h), whose defaults
// these are: a hashed table's initial rows, admission and eviction.
// Validated by the pserver (ValidateTableConfig).
struct HashedTable {
  1: i32 init = 0,                  // RowInit: 0 zeros, 1 uniform, 2 normal
  2: double init_scale = 0.01,
  3: i64 seed = 0,
  4: i32 admit_after = 1,           // 1..255: a row at the id's k-th push
  5: double admit_probability = 1.0,
  6: i64 ttl_seconds = 0,           // 0: rows never expire
  7: i64 budget_bytes = 0,          // per pserver; 0: no budget
}

// What a pserver keeps to come back after a restart: the layout and the rules
// it was initialized with (written beside its checkpoints).
struct InitConfig {
  1: binary layout,                 // docs/formats/layout.md (pserver::Layout::Encode)
  2: UpdateRule default_rule,
  3: map<string, UpdateRule> rules, // per parameter name
  4: map<string, HashedTable> tables, // per hashed table name
}

enum InitGrantKind {
  GRANTED = 1,              // the caller initializes: InitParams, InitBlock..., FinishInitParams
  WAIT = 2,                 // another trainer is initializing: poll Status until initialized
  ALREADY_INITIALIZED = 3,  // nothing to do
}

struct TrainerHello {
  1: i64 trainer_id,          // the trainer's own id, for logs and re-registration
  2: binary fabric_address,   // its endpoint address
  3: binary credit_region,    // transport::RemoteRegion the pserver writes credits to
  4: string provider,         // must equal the pserver's provider
  5: i64 max_slot_bytes,      // the largest gradient block it will push
}

struct BlockLocation {
  1: i32 block,
  2: i64 offset,  // of the block's values in the arena region
  3: i64 bytes,
}

struct Registration {
  1: i32 trainer_index,        // goes into every push's immediate data
  2: binary fabric_address,    // the pserver's endpoint
  3: binary arena_region,      // RemoteRegion of the parameter values (read-only use)
  4: binary landing_region,    // RemoteRegion of this trainer's landing slots
  5: i32 num_slots,
  6: i64 slot_bytes,
  7: list<BlockLocation> blocks,  // every block this pserver owns
  8: i32 pserver_index,
  9: i32 mode = 0,             // 0 async, 1 sync (fabps-pserver --mode; docs/sync.md)
  10: i32 num_trainers = 0,    // sync: gradients summed per step
  11: i64 sync_step = 0,       // sync: the largest step of this pserver's blocks
}

// A hashed table on one pserver (protocol::TableStats).
struct TableStatus {
  1: string name,
  2: i64 rows,             // held now
  3: i64 bytes,            // rows * bytes_per_row, plus the admission sketch
  4: i64 bytes_per_row,
  5: i64 admitted,         // rows created
  6: i64 evicted_ttl,
  7: i64 evicted_budget,
  8: i64 not_admitted,     // pushed rows dropped: id not admitted yet
  9: i64 over_budget,      // eviction sweeps that found the table over budget
}

struct PsStatus {
  1: i32 index,
  2: i32 num_pservers,
  3: bool initialized,
  4: string provider,
  5: i64 gradients_applied,
  6: i64 gradients_rejected,
  7: i64 bytes_applied,
  8: i32 trainers_registered,
  9: string last_checkpoint,   // path, "" when none yet
  10: i64 last_checkpoint_unix_ms,
  11: i64 num_blocks,           // owned by this pserver
  12: i32 mode = 0,             // 0 async, 1 sync
  13: i64 sync_step = 0,        // sync: the largest step of this pserver's blocks
  14: i64 sync_steps_forced = 0,  // sync: block steps applied after the step deadline
  15: list<TableStatus> tables,   // hashed tables
}

service PServer {
  InitGrantKind BeginInitParams(1: i64 trainer_id) throws (1: PsError e),
  void InitParams(1: i64 trainer_id, 2: InitConfig config) throws (1: PsError e),
  void InitBlock(1: i64 trainer_id, 2: i32 block, 3: binary values) throws (1: PsError e),
  // false when the parameters were already initialized (by someone else):
  // callers treat that as success.
  bool FinishInitParams(1: i64 trainer_id) throws (1: PsError e),
  InitConfig GetInitConfig() throws (1: PsError e),
  Registration RegisterTrainer(1: TrainerHello hello) throws (1: PsError e),
  // Writes a checkpoint of this shard into directory `dir` (created if
  // missing); returns the file's path.
  string SaveModel(1: string dir) throws (1: PsError e),
  PsStatus GetStatus(),
  // Sets the learning rate of each named parameter (name -> rate) for every
  // later update of its blocks on this pserver, and records it in the
  // InitConfig kept beside the checkpoints: GetInitConfig returns it and a
  // pserver restarted from its checkpoints applies it. All or nothing:
  // INVALID_ARGUMENT for a rate that is not finite and >= 0, NOT_FOUND for
  // a name the layout does not have, FAILED_PRECONDITION for a rule with
  // the linear_decay schedule (protocol::CheckNewLearningRate) or before
  // initialization; each message names the parameter. `trainer_id` is for
  // the log.
  void SetLearningRates(1: i64 trainer_id, 2: map<string, double> rates) throws (1: PsError e),
}
