// PServerSession: a trainer's link to the pservers of its job, which every
// data path of PServerClient uses: where the pservers are (discovery), the
// control-plane connections, the fabric endpoint with its credit handler and
// landing-slot table, the registration with each pserver, the job's layout,
// and the reconnect that rebuilds all of it after a failure.
//
// A data call starts with Prepare: it registers on first use and, after a
// call failed in a way that may mean a pserver died or moved (Note), drops
// every connection and registration and builds them again (pushes in
// flight fail with Unavailable; a fresh endpoint is used because some
// providers (shm) keep an endpoint stuck behind a transfer to a dead peer).
// With a store, every reconnect looks the pservers up again, so a pserver
// restarted elsewhere is found, and a job re-sharded to another pserver
// count is followed (the endpoint and slot table are made afresh).
//
// Thread safety: none; PServerClient serializes every call with its lock.
// The endpoint's progress thread calls only into PushSlots.
#ifndef FABPS_TRAINER_PSERVER_SESSION_H_
#define FABPS_TRAINER_PSERVER_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "protocol/wire.h"
#include "trainer/init_election.h"
#include "trainer/pserver_client.h"
#include "trainer/pserver_connection.h"
#include "trainer/pserver_discovery.h"
#include "trainer/push_slots.h"
#include "trainer/rows_staging.h"
#include "transport/fabric.h"

namespace fabps::trainer {

class PServerSession {
 public:
  // What this client knows of one pserver's data plane after registering.
  struct Peer {
    transport::PeerId id = 0;
    PServerRegistration reg;
  };

  // Finds the pservers (addresses or the store, waiting up to init_wait_ms),
  // opens the connections (not yet connected), the fabric and the endpoint.
  // Registers nothing yet.
  static Result<std::unique_ptr<PServerSession>> Open(
      const PServerClientOptions& options);
  ~PServerSession();

  // Every data call starts here: registers when not ready, reconnects when a
  // failure was noted. A failure to get ready is noted like a failed call.
  Status Prepare(Deadline deadline);
  // Records that `s` failed (any code but InvalidArgument and NotFound,
  // which are the caller's mistakes): the next Prepare reconnects. Returns s.
  Status Note(const Status& s);
  // Marks the session for a reconnect.
  void MarkBroken() { broken_ = true; }

  // Whether a data call on `buffers` would start without waiting: ready, no
  // reconnect due, and for a push a free slot on each block's pserver. A
  // buffer the layout does not know counts as startable: the call refuses
  // it before anything moves.
  bool StartsAtOnce(const std::vector<ParamBuffer>& buffers, bool push);
  // FailedPrecondition unless the pservers run sync mode exactly when
  // `with_step` (a push with a step is a sync push).
  Status CheckMode(bool with_step) const;

  // Writes `len` bytes of `region` at `offset` into landing slot `slot` of
  // pserver `ps` at `remote_offset`, with the push word `imm`: one credit
  // part and one operation of `h`. When the write cannot start nothing
  // landed, so the slot is released and the part fails.
  Status WriteIntoSlot(uint32_t ps, uint32_t slot,
                       const transport::MemoryRegion& region, size_t offset,
                       size_t len, size_t remote_offset,
                       const protocol::wire::PushImm& imm,
                       const std::shared_ptr<TransferHandle>& h,
                       Deadline deadline);
  // Where block `block` of `bytes` bytes lives in pserver `ps`'s arena;
  // Corruption when the registration does not list it so.
  Result<uint64_t> ArenaOffset(uint32_t ps, uint32_t block,
                               uint64_t bytes) const;
  // The registered staging memory mirroring pserver `ps`'s landing slots
  // (made on first use after each registration).
  Result<RowsStaging*> StagingOf(uint32_t ps);
  // Staging made for `ps`, or null.
  RowsStaging* staging(uint32_t ps) { return staging_[ps].get(); }

  // Valid after a successful Prepare.
  const Layout& layout() const { return *layout_; }
  const Peer& peer(uint32_t ps) const { return peers_[ps]; }
  size_t num_pservers() const { return conns_.size(); }

  const PServerClientOptions& options() const { return options_; }
  std::vector<std::unique_ptr<PServerConnection>>& connections() {
    return conns_;
  }
  InitElection& election() { return *election_; }
  transport::Fabric& fabric() { return *fabric_; }
  transport::Endpoint* endpoint() { return endpoint_.get(); }
  PushSlots& slots() { return *slots_; }

 private:
  explicit PServerSession(const PServerClientOptions& options);
  Status OpenConnections(const std::vector<std::string>& addresses);
  Status OpenEndpoint();
  Status Register(uint32_t i, Deadline deadline);
  Status Rediscover(Deadline deadline);
  Status EnsureReady(Deadline deadline);
  Status Reconnect(Deadline deadline);

  PServerClientOptions options_;
  std::unique_ptr<PServerDiscovery> discovery_;
  std::vector<std::unique_ptr<PServerConnection>> conns_;  // by index
  std::unique_ptr<InitElection> election_;
  std::unique_ptr<transport::Fabric> fabric_;
  std::vector<char> credit_buf_;
  std::unique_ptr<transport::MemoryRegion> credit_mr_;
  std::unique_ptr<PushSlots> slots_;
  std::unique_ptr<transport::Endpoint> endpoint_;  // after slots_: its
                                                   // progress thread uses them
  std::vector<Peer> peers_;  // by index, valid while `ready_`
  std::vector<std::unique_ptr<RowsStaging>> staging_;  // by index
  std::unique_ptr<Layout> layout_;
  bool ready_ = false;
  // Set when an operation failed in a way that may mean a pserver died or
  // moved; the next Prepare reconnects first.
  bool broken_ = false;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_PSERVER_SESSION_H_
