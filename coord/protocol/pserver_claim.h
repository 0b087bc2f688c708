// PserverClaim: a pserver's ownership of one index of its job.
//
// A pserver of a job of N pservers (1) agrees on ps/count = N and on
// ps/mode (async or sync with its trainer count): puts each when absent,
// refuses to start when the job has another value; (2) claims
// ps/<i>/lock with a lease it keeps alive, the first free i below N (or
// exactly the index it was told), waiting while all are taken until an
// owner releases or dies (its lease runs out); (3) publishes "host:port"
// under ps/<i>/addr with the same lease, so the address vanishes with the
// owner; (4) records each checkpoint under ps/<i>/checkpoint (no lease:
// the record outlives the owner, checkpoint_record.h). Writes (3) and (4)
// are fenced by the claim: an owner that lost its claim cannot overwrite
// its successor's.
//
//   auto claim = PserverClaim::Claim(store, {.num_pservers = 2, ...},
//                                    Deadline::Infinite(), cancelled);
//   auto last = ReadCheckpointRecord(store, (*claim)->index(), deadline);
//   (*claim)->PublishAddress("10.0.0.5:7000", deadline);
//   ... if (!(*claim)->held()) stop serving at once;
//   (*claim)->RecordCheckpoint({dir, file, crc, time}, deadline);
//   (*claim)->Release(deadline);  // clean hand-over: the index is free now
//
// held() turns false (and options.on_lost runs once) when the lease is
// lost: the store said it expired, or no renewal succeeded for a whole TTL.
//
// Thread safety: index(), held(), lease() from any thread; the rest from
// one thread at a time. The Store must outlive the claim. Destroying a
// claim without Release keeps the index taken while the Store lives (it
// renews the lease); after the Store is gone the index expires with the
// lease, as after a crash.
#ifndef FABPS_COORD_PROTOCOL_PSERVER_CLAIM_H_
#define FABPS_COORD_PROTOCOL_PSERVER_CLAIM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/lease_lock.h"
#include "coord/protocol/checkpoint_record.h"
#include "coord/protocol/job_keys.h"
#include "coord/store.h"

namespace fabps::coord {

struct PserverClaimOptions {
  uint32_t num_pservers = 1;      // 1..keys::kMaxPservers
  std::optional<uint32_t> index;  // claim exactly this one (< num_pservers)
  int64_t ttl_seconds = 5;        // >= 2
  std::string owner;              // stored under ps/<i>/lock, for humans
  keys::PsMode mode;              // agreed under ps/mode (default async)
  // Runs once, on the store's keep-alive thread, when the lease is lost.
  std::function<void(const Status& why)> on_lost;
  // How often a waiting claim tries again (also while the store is down).
  int64_t retry_ms = 200;
};

class PserverClaim {
 public:
  // Steps (1) and (2) above. Rides out store outages (logged, "retrying")
  // until `deadline` (TimedOut) or `cancelled` returns true (Cancelled;
  // `cancelled` may be empty). FailedPrecondition when the job's ps/count
  // differs from options.num_pservers or its ps/mode from options.mode;
  // InvalidArgument for bad options; Corruption when ps/count or ps/mode
  // holds something this module would not have written.
  static Result<std::unique_ptr<PserverClaim>> Claim(
      Store* store, const PserverClaimOptions& options, Deadline deadline,
      const std::function<bool()>& cancelled = {});

  uint32_t index() const { return index_; }
  bool held() const { return lock_->held(); }
  LeaseId lease() const { return lock_->lease(); }

  // ps/<index>/addr = host_port, with the claim's lease, fenced.
  // FailedPrecondition when the claim was lost.
  Status PublishAddress(const std::string& host_port, Deadline deadline);
  // ps/<index>/checkpoint = the encoded record, no lease, fenced.
  // InvalidArgument for a record EncodeCheckpointRecord refuses;
  // FailedPrecondition when the claim was lost.
  Status RecordCheckpoint(const CheckpointRecord& record, Deadline deadline);
  // Revokes the lease: ps/<index>/lock and /addr vanish at once.
  Status Release(Deadline deadline);

 private:
  PserverClaim(uint32_t index, std::unique_ptr<LeaseLock> lock)
      : index_(index), lock_(std::move(lock)) {}
  const uint32_t index_;
  std::unique_ptr<LeaseLock> lock_;
};

}  // namespace fabps::coord

#endif  // FABPS_COORD_PROTOCOL_PSERVER_CLAIM_H_
