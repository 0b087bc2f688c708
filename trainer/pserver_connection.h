// PServerConnection: the control-plane (Thrift) connection of a trainer to
// one pserver, and the trainer's registration with it.
//
// Call runs one RPC and turns the pserver's PsError into a Status with the
// pserver's index in its context; transport failures come back as the RPC
// layer reports them (Unavailable, TimedOut). Register sends this trainer's
// hello and checks every number of the reply before it is used.
//
// Thread safety: one thread at a time (PServerClient serializes).
#ifndef FABPS_TRAINER_PSERVER_CONNECTION_H_
#define FABPS_TRAINER_PSERVER_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/deadline.h"
#include "base/status.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/pserver/PServer.h"
#include "transport/fabric.h"

namespace fabps::trainer {

// What a pserver told a registering trainer.
struct PServerRegistration {
  std::string fabric_address;       // the pserver's endpoint
  transport::RemoteRegion arena;    // parameter values (pulls read here)
  transport::RemoteRegion landing;  // this trainer's slots (pushes land here)
  uint32_t trainer_index = 0;       // this trainer on that pserver
  uint32_t num_slots = 0;
  uint64_t slot_bytes = 0;
  bool sync = false;          // the pserver runs --mode sync
  uint32_t num_trainers = 0;  // sync: trainers whose gradients make a step
  uint64_t sync_step = 0;     // sync: its blocks' largest step then
  // Block id -> (offset in the arena, bytes).
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> blocks;
};

class PServerConnection {
 public:
  // Does not connect yet (the first Call does). InvalidArgument for an
  // address that is not "host:port".
  static Result<std::unique_ptr<PServerConnection>> Open(
      uint32_t index, const std::string& address, int rpc_timeout_ms);

  uint32_t index() const { return index_; }

  // Runs `fn` on the Thrift client; PsError becomes a Status. With a
  // deadline, the call's socket timeouts are cut to what is left of it.
  template <class Fn>
  Status Call(const std::string& what, Fn&& fn) {
    return Call(what, Deadline::Infinite(), std::forward<Fn>(fn));
  }
  template <class Fn>
  Status Call(const std::string& what, Deadline deadline, Fn&& fn);

  // Registers until `deadline` (retrying while the pserver is not ready).
  Result<PServerRegistration> Register(const rpc::pserver::TrainerHello& hello,
                                       Deadline deadline);

  void Close() { conn_->Close(); }

 private:
  PServerConnection(
      uint32_t index,
      std::unique_ptr<rpc::RpcConnection<rpc::pserver::PServerClient>> c)
      : index_(index), conn_(std::move(c)) {}

  uint32_t index_;
  std::unique_ptr<rpc::RpcConnection<rpc::pserver::PServerClient>> conn_;
};

// The Status of a pserver's error reply.
Status FromPsError(const rpc::pserver::PsError& e);

// Retries `call` every `pause_ms` while it fails with one of the codes a
// starting or not yet initialized pserver gives (Unavailable,
// FailedPrecondition), until `deadline`.
template <class Fn>
Status RetryWhileNotReady(Fn&& call, Deadline deadline, int pause_ms);

template <class Fn>
Status PServerConnection::Call(const std::string& what, Deadline deadline,
                               Fn&& fn) {
  Status inner;
  Status outer =
      conn_->Call(what, deadline, [&](rpc::pserver::PServerClient& c) {
        try {
          fn(c);
        } catch (const rpc::pserver::PsError& e) {
          inner = FromPsError(e).WithContext(what + " on pserver " +
                                             std::to_string(index_));
        }
      });
  return outer.ok() ? inner : outer;
}

bool IsNotReady(const Status& s);
void PauseMs(int ms);

template <class Fn>
Status RetryWhileNotReady(Fn&& call, Deadline deadline, int pause_ms) {
  for (;;) {
    Status st = call();
    if (st.ok() || !IsNotReady(st) || deadline.Expired()) return st;
    PauseMs(pause_ms);
  }
}

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_PSERVER_CONNECTION_H_
