// PServerClient: how a trainer pushes gradients to and pulls parameters from
// the pservers of a job.
//
//   PServerClientOptions o;
//   o.addresses = {"10.0.0.1:7000", "10.0.0.2:7000"};
//   auto c = PServerClient::Connect(o);             // control plane only
//   if ((*c)->BeginInitParams(selected).value()) {  // this trainer initializes
//     (*c)->InitParam({"fc1.w", DType::kFloat32, {784, 256}}, w, bytes);
//     (*c)->FinishInitParams();
//   }
//   (*c)->GetParams({{"fc1.w", w, bytes}}, deadline);  // waits for init
//   auto h = (*c)->SendGrads({{"fc1.w", g, bytes}}, deadline);  // async
//   (*c)->Wait(*h, deadline);                  // applied on every pserver
//   auto r = (*c)->GetParamsAsync({{"fc1.w", w, bytes}}, deadline);
//   (*c)->Wait(*r, deadline);                  // w holds the values
//
// Every name a user needs is in fabps::trainer (DType, ParamSpec,
// UpdateRuleConfig, RuleKind, LrSchedule, Layout, TrainerId): no protocol::
// type has to be spelled.
//
// Data path: the client computes the layout (protocol/layout.h) like the
// pservers do, and moves each block straight between the caller's buffer
// and the owning pserver by one-sided RMA: a push writes the block into one
// of this trainer's landing slots on the pserver, a pull reads it from the
// pserver's arena. Caller buffers are registered once through the fabric's
// registration cache (zero copy), and blocks to different pservers move
// concurrently. A push completes when the pserver has applied it (its credit
// came back), so Wait() returning OK means the update is visible to pulls.
//
// Buffers: a buffer handed to SendGrads or GetParamsAsync must stay valid
// (and, for a push, unchanged) until Wait on its handle returns; GetParams
// fills buffers before it returns. A buffer's memory stays registered in the
// cache: before freeing memory that was pushed from or pulled into, call
// ForgetBuffer.
//
// Errors: every data call has a deadline; a dead pserver turns into
// Unavailable or TimedOut within it, never a hang. After such an error the
// client is marked broken and the next SendGrads or GetParams reconnects
// first: it fails the pushes still in flight (Unavailable), opens a fresh
// endpoint, waits (within that call's deadline) for every pserver to serve
// again (a restarted pserver comes back from its last checkpoint at the same
// address) and registers anew. A trainer therefore treats a failed step as
// lost and goes on with the next one.
//
// Finding the pservers: `addresses`, or, when it is empty, the coordination
// store `store_spec` of `job`: ps/count gives their number and ps/<i>/addr
// pserver i's address (published by fabps-pserver --store with its claim on
// the index). Connect waits up to init_wait_ms for all of them; every
// reconnect looks them up again, so a pserver restarted elsewhere (another
// port or host) is found. Which trainer initializes: see BeginInitParams
// and trainer/init_election.h (the store decides when there is one, else
// pserver 0's init grant).
//
// Thread safety (the same rule as the C API): a client may be used from
// several threads; its calls are serialized by a lock inside it, so they do
// not overlap (a Wait blocks the client's other calls until it returns).
// For parallel transfers use one client per thread. Handles may be waited
// on from any thread, each handle once at a time.
#ifndef FABPS_TRAINER_PSERVER_CLIENT_H_
#define FABPS_TRAINER_PSERVER_CLIENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "protocol/dtype.h"
#include "protocol/hashed_table.h"
#include "protocol/layout.h"
#include "protocol/rule_config.h"
#include "trainer/trainer_id.h"

namespace fabps::trainer {

// The protocol library's types as the trainer API names them.
using DType = protocol::DType;
using ParamSpec = protocol::ParamSpec;
using Layout = protocol::Layout;
using UpdateRuleConfig = protocol::UpdateRuleConfig;
using TableConfig = protocol::TableConfig;
using RowInit = protocol::RowInit;
using ParamKind = protocol::ParamKind;
using protocol::HashedSpec;
using RuleKind = protocol::RuleKind;
using LrSchedule = protocol::LrSchedule;
using protocol::DTypeSize;
using protocol::RuleName;
using protocol::ValidateRuleConfig;

struct PServerClientOptions {
  std::vector<std::string> addresses;  // "host:port" of pserver 0, 1, ...
  std::string store_spec;  // used when `addresses` is empty (see above)
  std::string job = "default";
  std::string provider = "auto";
  std::string
      interface_address;     // fabric interface; "" : the provider's choice
  TrainerId trainer_id = 0;  // 0: a random id (see trainer_id())
  uint64_t block_elements = Layout::kDefaultBlockElements;
  UpdateRuleConfig default_rule;
  std::map<std::string, UpdateRuleConfig> rules;  // per parameter name
  int rpc_timeout_ms = 10000;
  // How long BeginInitParams waits for the election and Connect for the
  // pservers to appear in the store (data calls take their own deadline).
  int init_wait_ms = 120000;
};

// A parameter's bytes in caller memory: `bytes` must equal its element count
// times its element size.
struct ParamBuffer {
  std::string name;
  void* data = nullptr;
  size_t bytes = 0;
};

// A push or a pull in flight (trainer/transfer_handle.h), waited on with
// PServerClient::Wait. Shared: the client keeps a reference while blocks
// are in flight.
class TransferHandle;
using PushHandle = TransferHandle;
using PullHandle = TransferHandle;

class PServerClient {
 public:
  // Opens the fabric and control connections. Does not need the pservers to
  // be initialized.
  static Result<std::unique_ptr<PServerClient>> Connect(
      const PServerClientOptions& options);
  ~PServerClient();

  // The original design's contract: returns true when this trainer must
  // initialize (it was `selected` and holds the init grant of every
  // pserver), false when someone else does or did (then just use the data
  // calls: they wait until the parameters exist).
  // With a store, `selected` is ignored: the trainer that takes the leased
  // key init/lock initializes; the others wait here until init/done appears
  // (false) or, if the initializer died (its lease ran out), one of them
  // takes init/lock over and initializes instead. FinishInitParams puts
  // init/done and releases init/lock. Without a store pserver 0's grant
  // decides among the selected trainers (trainer/init_election.h). Waits
  // until `deadline` (TimedOut); without one, init_wait_ms.
  Result<bool> BeginInitParams(bool selected, Deadline deadline);
  Result<bool> BeginInitParams(bool selected);
  // Records a parameter and its initial values (copied).
  Status InitParam(const ParamSpec& spec, const void* data, size_t bytes);
  // Records a hashed table (spec from HashedSpec: kind kHashed, the shape
  // of one row, its buckets) with its initial rows, admission and eviction
  // (protocol/hashed_table.h). It starts without rows, or with the `rows`
  // given (distinct ids at `ids`, their values row after row at `values`,
  // copied; e.g. a model file's, ReadModelFor), each admitted with the
  // rule's initial state. Its rows move by SendRows and GetRows with any
  // 64-bit ids (int64 bits read as uint64).
  Status InitTable(const ParamSpec& spec, const TableConfig& config,
                   const uint64_t* ids = nullptr, const void* values = nullptr,
                   uint64_t rows = 0);
  // Builds the layout from every InitParam, sends it and the values to the
  // pservers and ends initialization. "Already initialized" counts as OK.
  // TimedOut when `deadline` (without one: init_wait_ms) passes before the
  // last RPC started (each RPC is bounded by rpc_timeout_ms); the recorded
  // parameters are kept, so a later call may finish.
  Status FinishInitParams(Deadline deadline);
  Status FinishInitParams();

  // Pushes the gradients of the named parameters. Returns at once with a
  // handle (blocks, until `deadline`, only while the parameters are not
  // initialized yet, while reconnecting, or while every landing slot on a
  // pserver is taken). Every buffer is checked first: a bad one
  // (InvalidArgument, NotFound) sends nothing.
  Result<std::shared_ptr<PushHandle>> SendGrads(
      const std::vector<ParamBuffer>& grads, Deadline deadline);
  // SendGrads and GetParamsAsync that never wait: when the call could not
  // start at once (the client is not ready: not registered yet, parameters
  // not initialized, or a reconnect is due; or, for a push, a pserver has
  // fewer free landing slots than the push has blocks for it) they return
  // a null handle and have done nothing. Otherwise, and for every error
  // found before anything moves, as the waiting calls (a push of a client
  // in sync mode is FailedPrecondition). For callers that must not block
  // uninterruptibly: the Python binding runs these on the calling thread
  // and only a null answer on its worker thread, which costs two thread
  // hand-offs per call.
  Result<std::shared_ptr<PushHandle>> TrySendGrads(
      const std::vector<ParamBuffer>& grads, Deadline deadline);
  Result<std::shared_ptr<PullHandle>> TryGetParamsAsync(
      const std::vector<ParamBuffer>& params, Deadline deadline);
  // Sync mode (fabps-pserver --mode sync --num-trainers N, docs/sync.md):
  // pushes the gradients of step `step`. Each pserver adds the gradients of
  // all N trainers for a block's step up (a sum, not a mean: fold 1/N into
  // the learning rate) and applies the sum once; Wait on the handle returns
  // when every block's step has been applied, so a pull after it sees
  // exactly the update of step `step` (and nothing of step + 1, which needs
  // this trainer's gradients too). The gradients are copied into this
  // client's staging memory before SendGrads returns. Push all blocks of a
  // step (the same parameters in the same order on every trainer) before
  // waiting. A step the pservers have already applied is refused
  // (FailedPrecondition), as is one more than one step ahead
  // (InvalidArgument); the refusal names the block and the pserver logs
  // why. A step that waits longer than the pservers' --step-deadline-ms for
  // a trainer is applied with the gradients that arrived. Steps start at 0
  // (or where SyncStep says). FailedPrecondition on pservers in async mode;
  // the step-less SendGrads is FailedPrecondition in sync mode.
  Result<std::shared_ptr<PushHandle>> SendGrads(
      const std::vector<ParamBuffer>& grads, uint64_t step, Deadline deadline);
  // Sync mode: the step to push next when (re)joining a running job: the
  // largest step of any block on any pserver (asked now). A trainer that
  // restarts calls it, pulls the parameters and goes on from there; it must
  // reuse its old trainer id (a sync pserver takes exactly N trainers).
  Result<uint64_t> SyncStep(Deadline deadline);
  // Starts reading the current values of the named parameters into the
  // buffers and returns a handle; checks and waits like SendGrads. The
  // buffers are filled when Wait on the handle returns OK.
  Result<std::shared_ptr<PullHandle>> GetParamsAsync(
      const std::vector<ParamBuffer>& params, Deadline deadline);
  // A push and a pull in one transfer, pipelined: pushes `grads` as
  // SendGrads does and reads `params` as GetParamsAsync does, but a block
  // of a parameter named in both lists is read as soon as its push is
  // applied (its credit is back), while later blocks are still being pushed
  // or applied; blocks of parameters only in `params` are read at once.
  // Wait on the handle returns when every push is applied and every read
  // is in: each pushed block then holds values that include this push.
  // Checks and waits like SendGrads (nothing moves when a buffer is bad);
  // async mode only (FailedPrecondition in sync mode). A block whose push a
  // pserver refuses is not read (Wait reports the refusal). Both lists'
  // buffers must stay untouched until Wait returns; a transfer whose Wait
  // failed or timed out starts no further reads.
  Result<std::shared_ptr<TransferHandle>> PushPull(
      const std::vector<ParamBuffer>& grads,
      const std::vector<ParamBuffer>& params, Deadline deadline);
  // Rows of a parameter of rank >= 2 (an embedding table [rows, d1, ...]):
  // row i of the table is its R = d1 * ... elements. A hashed table's ids
  // are any 64-bit values (int64 bits read as uint64) and R is the product
  // of its row shape; a read of an id without a row gives the table's
  // initial row, a push of one counts toward its admission
  // (protocol/hashed_table.h); sync mode has no hashed tables. `row_ids` holds
  // `num_rows` (>= 0) row indices in any order, duplicates allowed;
  // `values` holds num_rows * R elements of the parameter's type, row k's
  // R elements for row_ids[k]; `bytes` must be exactly that size.
  //
  // SendRows pushes row gradients: the rows of repeated ids are summed (in
  // caller order), then every row is updated by the parameter's rule as if
  // that sum were the gradient, touching no other row (lazy updates: the
  // optimizer state of untouched rows stays as it is). Rows of one layout
  // block go to its pserver as one push, so each block's update count
  // (Adam's t) goes up once per call that touches it; blocks on different
  // pservers move concurrently. `values` is copied before SendRows returns
  // (it may be reused at once). Wait on the handle means "applied".
  // InvalidArgument (nothing sent) for an id outside [0, rows), a size
  // mismatch or a rank-1 parameter; NotFound for an unknown name.
  Result<std::shared_ptr<PushHandle>> SendRows(const std::string& name,
                                               const int64_t* row_ids,
                                               size_t num_rows,
                                               const void* values, size_t bytes,
                                               Deadline deadline);
  // Sync mode: pushes this trainer's row gradients of step `step` (what
  // SendGrads with a step is for dense parameters; summing, refusals and
  // Wait as there). Every block of the parameter gets this trainer's share
  // of the step, an empty one (no rows) where none of `row_ids` falls: a
  // block's step needs every trainer's share, and num_rows may be 0. Each
  // block's pserver applies the rule once per step to the rows any trainer
  // sent, summed over trainers (lazy: other rows and their state stay); a
  // block no trainer touched in a step updates no row but still counts the
  // step (Adam's t). FailedPrecondition on async pservers; the step-less
  // SendRows is FailedPrecondition in sync mode. docs/sync.md.
  Result<std::shared_ptr<PushHandle>> SendRows(
      const std::string& name, const int64_t* row_ids, size_t num_rows,
      const void* values, size_t bytes, uint64_t step, Deadline deadline);
  // Starts reading rows: values[k * R ..] receives row row_ids[k] (checks
  // as SendRows). Each block's pserver copies the rows out under the
  // block's lock (a consistent snapshot of each row with respect to
  // applies) into this trainer's landing slot, and Wait reads them from
  // there into `values`, which must stay valid until Wait returns. The
  // slots stay taken until then: always Wait on the handle. A read holds
  // at most half of a pserver's slots, so pushes go on while it is in
  // flight: when the rows span more blocks (buckets) of one pserver than
  // that, GetRows itself waits for the first ones before asking for more.
  Result<std::shared_ptr<PullHandle>> GetRows(const std::string& name,
                                              const int64_t* row_ids,
                                              size_t num_rows, void* values,
                                              size_t bytes, Deadline deadline);
  // Waits until every block of the push is applied (of the pull is read),
  // or the first error; TimedOut at `deadline`.
  Status Wait(const std::shared_ptr<TransferHandle>& handle, Deadline deadline);
  // Waits until Wait on `handle` would return at once, or until `until`;
  // returns whether it would. Takes no lock and records nothing (the client
  // is not marked broken): for callers that wait in short slices and check
  // for other events in between (the Python binding checks for Ctrl-C),
  // then call Wait for the result.
  static bool Finished(const std::shared_ptr<TransferHandle>& handle,
                       Deadline until);
  // GetParamsAsync and Wait in one call.
  Status GetParams(const std::vector<ParamBuffer>& params, Deadline deadline);
  // Each pserver writes a checkpoint of its shard into `dir` (a path on the
  // pservers' machines). TimedOut when not every pserver has saved by
  // `deadline` (each save is one RPC whose socket timeouts are what is left
  // of the deadline).
  Status SaveModel(const std::string& dir, Deadline deadline);

  // Sets the learning rate of each named parameter (name -> rate) on every
  // pserver, for every later update of its blocks (in both modes). Each
  // pserver records the rates with its InitConfig, so one restarted from
  // its checkpoints applies them. InvalidArgument for a rate that is not
  // finite and >= 0 and NotFound for a name the layout does not have
  // (nothing sent); FailedPrecondition for a parameter whose rule has the
  // linear_decay schedule (protocol::CheckNewLearningRate); each names the
  // parameter. A failure partway leaves the pservers before it with the new
  // rates: sending the same rates again is harmless. Waits for the
  // parameters to exist, like the data calls.
  Status SetLearningRates(const std::map<std::string, double>& rates,
                          Deadline deadline);
  // Every parameter's update rule (by name) as the pservers apply it now,
  // learning rates set by SetLearningRates included.
  Result<std::map<std::string, UpdateRuleConfig>> Rules(Deadline deadline);

  // The layout, once initialization is done (waits for it).
  Result<const Layout*> layout(Deadline deadline);
  // Every pserver's hashed tables as its status says (one entry per table
  // per pserver, by pserver index).
  using TableStats = protocol::TableStats;
  Result<std::vector<TableStats>> HashedTableStats(Deadline deadline);
  std::string provider() const;
  TrainerId trainer_id() const;
  void ForgetBuffer(const void* data, size_t bytes);
  // The registration cache of caller buffers (see ForgetBuffer): what a
  // binding that frees memory behind the caller's back can check.
  struct RegistrationStats {
    uint64_t hits = 0, misses = 0;
    size_t entries = 0, bytes = 0;
  };
  RegistrationStats registration_stats() const;

 private:
  struct Impl;
  explicit PServerClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_PSERVER_CLIENT_H_
