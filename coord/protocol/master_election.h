// MasterElection: which of a job's masters serves.
//
// Every master races for master/lock (a LeaseLock: created only when
// absent, attached to a lease it keeps alive); the winner serves, the
// others wait as standbys and one takes over within the lease TTL of the
// leader's death (at once when it releases). The leader publishes
// "host:port" under master/addr with the lock's lease, so the address
// vanishes with it, and fences every write of its state with Fence(): a
// deposed leader's writes fail instead of overwriting its successor's.
//
//   auto won = MasterElection::Win(store, {ttl, "host pid 7"},
//                                  Deadline::Infinite(), cancelled);
//   journal.SetFence({(*won)->Fence()});
//   (*won)->PublishAddress("10.0.0.2:7164", deadline);
//   ... if (!(*won)->held()) stop serving at once;
//   (*won)->Release(deadline);
//
// Trainers find the leader with discovery.h's LookupMaster/WaitForMaster.
//
// Thread safety: held(), Fence(), lease() from any thread; the rest from
// one thread at a time. The Store must outlive the election.
#ifndef FABPS_COORD_PROTOCOL_MASTER_ELECTION_H_
#define FABPS_COORD_PROTOCOL_MASTER_ELECTION_H_

#include <functional>
#include <memory>
#include <string>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/lease_lock.h"
#include "coord/store.h"

namespace fabps::coord {

struct MasterElectionOptions {
  int64_t ttl_seconds = 5;  // >= 2: a standby takes over this long after
  std::string identity;     // stored under master/lock, for humans
  // Runs once, on the store's keep-alive thread, when the lease is lost.
  std::function<void(const Status& why)> on_lost;
  int64_t retry_ms = 200;  // how often a standby tries again
};

class MasterElection {
 public:
  // Waits until master/lock is this process's, riding out store outages,
  // until `deadline` (TimedOut) or `cancelled` returns true (Cancelled;
  // may be empty).
  static Result<std::unique_ptr<MasterElection>> Win(
      Store* store, const MasterElectionOptions& options, Deadline deadline,
      const std::function<bool()>& cancelled = {});

  bool held() const { return lock_->held(); }
  LeaseId lease() const { return lock_->lease(); }
  // A compare that holds only while this process leads.
  Compare Fence() const { return lock_->Fence(); }

  // master/addr = host_port with the lock's lease, fenced;
  // FailedPrecondition when leadership was lost.
  Status PublishAddress(const std::string& host_port, Deadline deadline);
  // Revokes the lease: master/lock and master/addr vanish, a standby wins.
  Status Release(Deadline deadline);

 private:
  explicit MasterElection(std::unique_ptr<LeaseLock> lock)
      : lock_(std::move(lock)) {}
  std::unique_ptr<LeaseLock> lock_;
};

}  // namespace fabps::coord

#endif  // FABPS_COORD_PROTOCOL_MASTER_ELECTION_H_
