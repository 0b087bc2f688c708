// PserverCountChange: changing a stopped job's pserver count (re-sharding).
//
// A job's ps/count is fixed while pservers run (pserver_claim.h refuses a
// pserver of another count). To change it, the job's pservers stop (their
// claims released or expired) and a re-sharding tool (cmd/reshard) takes
// every index for itself:
//
//   Begin    one lease, and in one Txn ps/<i>/lock for every index
//            i < max(old, new), each with a value naming this change: no
//            pserver of either count can claim an index meanwhile. Refused
//            (FailedPrecondition naming the holder) when any index is held:
//            a pserver of the job is running.
//   ...      the caller writes the re-sharded checkpoints (pserver/reshard.h)
//   Commit   one Txn, only while every lock still holds this change's
//            value: ps/count = new, ps/<i>/checkpoint = the new records for
//            i < new, ps/<i>/checkpoint and ps/<i>/addr deleted for
//            i >= new; then the lease is revoked, freeing every index.
//
// A change destroyed without Commit revokes its lease: the job is as it
// was (the caller removes the files it wrote). A change that loses its
// lease (the store was unreachable for its TTL) cannot commit: Commit's
// compares fail and it returns FailedPrecondition.
//
// The two Txns hold one compare and op per index: max(old, new) is at most
// kMaxIndices so that each stays within the store's kMaxTxnOps.
//
// Thread safety: one thread at a time. The Store must outlive the change.
#ifndef FABPS_COORD_PROTOCOL_PSERVER_COUNT_CHANGE_H_
#define FABPS_COORD_PROTOCOL_PSERVER_COUNT_CHANGE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/protocol/checkpoint_record.h"
#include "coord/store.h"

namespace fabps::coord {

class PserverCountChange {
 public:
  static constexpr uint32_t kMaxIndices = 120;

  // Reads ps/count (FailedPrecondition when absent: the job never ran a
  // pserver), takes the locks. `owner` is stored in each lock, for humans
  // (fabps status shows it). InvalidArgument for new_count out of
  // 1..kMaxIndices or an old count above it.
  static Result<std::unique_ptr<PserverCountChange>> Begin(
      Store* store, uint32_t new_count, const std::string& owner,
      Deadline deadline);
  ~PserverCountChange();

  uint32_t old_count() const { return old_count_; }
  uint32_t new_count() const { return new_count_; }

  // records.size() == new_count(): record i goes to ps/<i>/checkpoint.
  // FailedPrecondition when a lock is no longer this change's (lease lost); the
  // store's errors otherwise (kTimedOut/kUnavailable: the effect is
  // unknown; read ps/count to learn it).
  Status Commit(const std::vector<CheckpointRecord>& records,
                Deadline deadline);

 private:
  PserverCountChange(Store* store, uint32_t old_count, uint32_t new_count,
                     LeaseId lease, std::string value);

  Store* const store_;
  const uint32_t old_count_;
  const uint32_t new_count_;
  const LeaseId lease_;
  const std::string value_;  // in every lock: unique to this change
  bool revoked_ = false;
};

// Waits until no ps/<i>/lock of the job is held: for a caller that stopped
// every pserver itself and is about to Begin a change. A pserver that exits
// cleanly deletes its lock, but one whose delete did not reach the store
// (or that was killed) leaves it until its lease runs out. OK once none is
// held; TimedOut at `deadline` naming the holders; the store's errors
// otherwise. Watches the store (no polling loop).
Status WaitForPserverLocksFree(Store* store, Deadline deadline);

}  // namespace fabps::coord

#endif  // FABPS_COORD_PROTOCOL_PSERVER_COUNT_CHANGE_H_
