// PServerClient: how a trainer pushes gradients to and pulls parameters from
// the pservers of a job.
//
//   PServerClientOptions o;
//   o.addresses = {"10.0.0.1:7000", "10.0.0.2:7000"};
//   auto c = PServerClient::Connect(o);           // control plane only
//   if ((*c)->BeginInitParams(selected).value()) {     // this trainer
//   initializes
//     (*c)->InitParam({"fc1.w", DType::kFloat32, {784, 256}}, w, bytes);
//     (*c)->FinishInitParams();
//   }
//   (*c)->GetParams({{"fc1.w", w, bytes}}, deadline);  // waits for init if
//   needed auto h = (*c)->SendGrads({{"fc1.w", g, bytes}});   // asynchronous
//   (*c)->Wait(*h, deadline);                           // applied on every
//   pserver
//
// Data path: the client computes the layout (pserver/layout.h) like the
// pservers do, and moves each block straight between the caller's buffer
// and the owning pserver by one-sided RMA: a push writes the block into one
// of this trainer's landing slots on the pserver, a pull reads it from the
// pserver's arena. Caller buffers are registered once through the fabric's
// registration cache (zero copy), and blocks to different pservers move
// concurrently. A push completes when the pserver has applied it (its credit
// came back), so Wait() returning OK means the update is visible to pulls.
//
// Buffers: a buffer handed to SendGrads must stay valid and unchanged until
// Wait on its handle returns; GetParams fills buffers before it returns. A
// buffer's memory stays registered in the cache: before freeing memory that
// was pushed from or pulled into, call ForgetBuffer.
//
// Errors: every call has a deadline; a dead pserver turns into Unavailable
// or TimedOut within it, never a hang. After such an error the client is
// marked broken and the next SendGrads or GetParams reconnects first: it
// fails the pushes still in flight (Unavailable), opens a fresh endpoint,
// waits (within that call's deadline) for every pserver to serve again (a
// restarted pserver comes back from its last checkpoint at the same
// address) and registers anew. A trainer therefore treats a failed step as
// lost and goes on with the next one.
//
// Finding the pservers: `addresses`, or, when it is empty, the coordination
// store `store_spec` of `job`: ps/count gives their number and ps/<i>/addr
// pserver i's address (published by fabps-pserver --store with its claim on
// the index). Connect waits up to init_wait_ms for all of them; every
// reconnect looks them up again, so a pserver restarted elsewhere (another
// port or host) is found. With a store, which trainer initializes is decided
// there too (init/lock, init/done): see BeginInitParams.
//
// Thread safety: one thread at a time per client (the fabric's progress
// thread runs inside). Use one client per trainer thread.
#ifndef FABPS_TRAINER_PSERVER_CLIENT_H_
#define FABPS_TRAINER_PSERVER_CLIENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "pserver/layout.h"
#include "pserver/update_rule.h"

namespace fabps::trainer {

struct PServerClientOptions {
  std::vector<std::string> addresses;  // "host:port" of pserver 0, 1, ...
  std::string store_spec;  // used when `addresses` is empty (see above)
  std::string job = "default";
  std::string provider = "auto";
  std::string
      interface_address;   // fabric interface; "" : the provider's choice
  int64_t trainer_id = 0;  // 0: a random id
  uint64_t block_elements = pserver::Layout::kDefaultBlockElements;
  pserver::UpdateRuleConfig default_rule;
  std::map<std::string, pserver::UpdateRuleConfig> rules;  // per parameter name
  int rpc_timeout_ms = 10000;
  int init_wait_ms =
      120000;  // how long data calls wait for another trainer's init
};

// A parameter's bytes in caller memory: `bytes` must equal its element count
// times its element size.
struct ParamBuffer {
  std::string name;
  void* data = nullptr;
  size_t bytes = 0;
};

class PushHandle;

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
  // init/done and releases init/lock.
  Result<bool> BeginInitParams(bool selected);
  // Records a parameter and its initial values (copied).
  Status InitParam(const pserver::ParamSpec& spec, const void* data,
                   size_t bytes);
  // Builds the layout from every InitParam, sends it and the values to the
  // pservers and ends initialization. "Already initialized" counts as OK.
  Status FinishInitParams();

  // Pushes the gradients of the named parameters. Returns at once with a
  // handle (blocks only while every landing slot on a pserver is taken).
  Result<std::shared_ptr<PushHandle>> SendGrads(
      const std::vector<ParamBuffer>& grads, Deadline deadline);
  // Waits until every block of the push is applied, or the first error.
  Status Wait(const std::shared_ptr<PushHandle>& handle, Deadline deadline);
  // Reads the current values of the named parameters into the buffers.
  Status GetParams(const std::vector<ParamBuffer>& params, Deadline deadline);
  // Each pserver writes a checkpoint of its shard into `dir`.
  Status SaveModel(const std::string& dir);

  // The layout, once initialization is done (waits for it).
  Result<const pserver::Layout*> layout(Deadline deadline);
  std::string provider() const;
  int64_t trainer_id() const;
  void ForgetBuffer(const void* data, size_t bytes);

 private:
  struct Impl;
  explicit PServerClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_PSERVER_CLIENT_H_
