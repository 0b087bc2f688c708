// State: the local store's key space and leases in memory, the state
// machine that the log's records drive (internal to coord/local/).
//
// Keys here are absolute ("/<job>/..."); the store strips the job prefix.
// Apply validates each record against the state (revisions in sequence,
// leases and keys that must exist) so a damaged or foreign log is reported
// as kCorruption instead of being half-applied. Not thread safe: the owner
// serializes access.
#ifndef FABPS_COORD_LOCAL_STATE_H_
#define FABPS_COORD_LOCAL_STATE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "coord/local/record.h"
#include "coord/store.h"

namespace fabps::coord::local {

struct StoredLease {
  int64_t ttl_seconds = 0;
  int64_t expiry_ms = 0;  // wall clock
  std::set<std::string> keys;
};

class State {
 public:
  int64_t revision() const { return revision_; }
  int64_t max_lease_id() const { return max_lease_id_; }
  const std::map<std::string, KeyValue>& keys() const { return keys_; }
  const std::map<LeaseId, StoredLease>& leases() const { return leases_; }

  // Applies `r`; appends the watch events it causes (absolute keys) to
  // `*events`. kCorruption, with the state unchanged, when `r` does not fit.
  Status Apply(const Record& r, std::vector<WatchEvent>* events);

  // Runs a txn against the state without changing it: fills `*result` and
  // the mutations to log (empty when the branch only reads). Keys absolute.
  // kNotFound when a Put names a missing lease.
  Status PlanTxn(const std::vector<Compare>& compares,
                 const std::vector<TxnOp>& then_ops,
                 const std::vector<TxnOp>& else_ops, TxnResult* result,
                 std::vector<Mutation>* mutations) const;

  // Leases whose expiry is at or before `now_ms`.
  std::vector<LeaseId> ExpiredLeases(int64_t now_ms) const;
  // The earliest lease expiry, INT64_MAX when there is no lease.
  int64_t NextExpiryMs() const;

  // The snapshot file's bytes (record.h) with `generation` in it.
  std::string EncodeSnapshot(uint64_t generation) const;
  // Replaces the state with a snapshot's; returns its generation.
  Status DecodeSnapshot(const std::string& bytes, uint64_t* generation);

 private:
  Status ApplyWrite(const Record& r, std::vector<WatchEvent>* events);
  void DeleteKey(const std::string& key, int64_t revision,
                 std::vector<WatchEvent>* events);

  int64_t revision_ = 0;
  int64_t max_lease_id_ = 0;
  std::map<std::string, KeyValue> keys_;
  std::map<LeaseId, StoredLease> leases_;
};

}  // namespace fabps::coord::local

#endif  // FABPS_COORD_LOCAL_STATE_H_
