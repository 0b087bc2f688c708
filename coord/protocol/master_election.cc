#include "coord/protocol/master_election.h"

#include "coord/protocol/job_keys.h"

namespace fabps::coord {

Result<std::unique_ptr<MasterElection>> MasterElection::Win(
    Store* store, const MasterElectionOptions& options, Deadline deadline,
    const std::function<bool()>& cancelled) {
  LeaseLockOptions lo;
  lo.ttl_seconds = options.ttl_seconds;
  lo.value = options.identity;
  lo.on_lost = options.on_lost;
  lo.retry_ms = options.retry_ms;
  FABPS_ASSIGN_OR_RETURN(
      std::unique_ptr<LeaseLock> lock,
      LeaseLock::Acquire(store, keys::kMasterLock, lo, deadline, cancelled));
  return std::unique_ptr<MasterElection>(new MasterElection(std::move(lock)));
}

Status MasterElection::PublishAddress(const std::string& host_port,
                                      Deadline deadline) {
  return lock_->PutIfHeld(keys::kMasterAddr, host_port, /*with_lease=*/true,
                          deadline);
}

Status MasterElection::Release(Deadline deadline) {
  return lock_->Release(deadline);
}

}  // namespace fabps::coord
