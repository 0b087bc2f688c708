#include "coord/protocol/pserver_count_change.h"

#include <algorithm>
#include <utility>

#include "base/log.h"
#include "coord/protocol/change_waiter.h"
#include "coord/protocol/job_keys.h"

namespace fabps::coord {
namespace {

constexpr int64_t kLeaseTtlSeconds = 10;

}  // namespace

Result<std::unique_ptr<PserverCountChange>> PserverCountChange::Begin(
    Store* store, uint32_t new_count, const std::string& owner,
    Deadline deadline) {
  if (new_count == 0 || new_count > kMaxIndices) {
    return Status::InvalidArgument(
        "new pserver count " + std::to_string(new_count) + " is not in 1.." +
        std::to_string(kMaxIndices));
  }
  Result<KeyValue> count_kv = store->Get(keys::kPsCount, deadline);
  if (count_kv.status().code() == Status::Code::kNotFound) {
    return Status::FailedPrecondition(
        "the job has no ps/count: no pserver of it ever ran, nothing to "
        "re-shard");
  }
  FABPS_RETURN_IF_ERROR(count_kv.status());
  FABPS_ASSIGN_OR_RETURN(uint32_t old_count,
                         keys::ParsePsCount(count_kv->value));
  if (old_count > kMaxIndices) {
    return Status::InvalidArgument("the job has " + std::to_string(old_count) +
                                   " pservers: re-sharding takes at most " +
                                   std::to_string(kMaxIndices));
  }
  const uint32_t span = std::max(old_count, new_count);
  FABPS_ASSIGN_OR_RETURN(Lease lease,
                         store->GrantLease(kLeaseTtlSeconds, deadline));
  const std::string value = "re-sharding " + std::to_string(old_count) +
                            " -> " + std::to_string(new_count) + " by " +
                            owner + " (lease " + std::to_string(lease.id) + ")";
  std::vector<Compare> compares = {
      Compare::ValueEquals(keys::kPsCount, count_kv->value)};
  std::vector<TxnOp> puts;
  for (uint32_t i = 0; i < span; ++i) {
    compares.push_back(Compare::Absent(keys::PsLock(i)));
    puts.push_back(TxnOp::Put(keys::PsLock(i), value, lease.id));
  }
  Result<TxnResult> r =
      store->Txn(compares, puts, {TxnOp::Get(keys::kPsPrefix, true)}, deadline);
  if (!r.ok() || !r->succeeded) {
    Status revoked = store->Revoke(lease.id, store->DefaultDeadline());
    if (!revoked.ok()) {
      FABPS_LOG(WARNING) << "revoking the re-sharding lease: "
                         << revoked.ToString();
    }
    FABPS_RETURN_IF_ERROR(r.status());
    std::string held;
    std::string count_now;
    for (const KeyValue& kv : r->results[0].kvs) {
      if (kv.key == keys::kPsCount) count_now = kv.value;
      Result<keys::PsKeyParts> parts = keys::ParsePsKey(kv.key);
      if (parts.ok() && parts->leaf == keys::PsLeaf::kLock &&
          parts->index < span) {
        held +=
            (held.empty() ? "" : "; ") + kv.key + " held by '" + kv.value + "'";
      }
    }
    if (!held.empty()) {
      return Status::FailedPrecondition("pservers of the job are running (" +
                                        held +
                                        "): stop them before re-sharding");
    }
    return Status::FailedPrecondition("ps/count changed from " +
                                      count_kv->value + " to '" + count_now +
                                      "' meanwhile");
  }
  Status alive = store->StartKeepAlive(lease.id, [](LeaseId, const Status& s) {
    FABPS_LOG(ERROR) << "re-sharding lease lost: " << s.ToString();
  });
  if (!alive.ok()) {
    store->Revoke(lease.id, store->DefaultDeadline());
    return alive;
  }
  return std::unique_ptr<PserverCountChange>(
      new PserverCountChange(store, old_count, new_count, lease.id, value));
}

PserverCountChange::PserverCountChange(Store* store, uint32_t old_count,
                                       uint32_t new_count, LeaseId lease,
                                       std::string value)
    : store_(store),
      old_count_(old_count),
      new_count_(new_count),
      lease_(lease),
      value_(std::move(value)) {}

PserverCountChange::~PserverCountChange() {
  if (revoked_) return;
  Status s = store_->Revoke(lease_, store_->DefaultDeadline());
  if (!s.ok()) {
    FABPS_LOG(WARNING) << "releasing the pserver indices: " << s.ToString()
                       << " (they free themselves when the lease expires)";
  }
}

Status PserverCountChange::Commit(const std::vector<CheckpointRecord>& records,
                                  Deadline deadline) {
  if (records.size() != new_count_) {
    return Status::InvalidArgument(
        "re-sharding commit: " + std::to_string(records.size()) +
        " checkpoint records for " + std::to_string(new_count_) + " pservers");
  }
  if (revoked_) return Status::FailedPrecondition("already committed");
  const uint32_t span = std::max(old_count_, new_count_);
  std::vector<Compare> compares = {
      Compare::ValueEquals(keys::kPsCount, keys::FormatPsCount(old_count_))};
  for (uint32_t i = 0; i < span; ++i) {
    compares.push_back(Compare::ValueEquals(keys::PsLock(i), value_));
  }
  std::vector<TxnOp> ops = {
      TxnOp::Put(keys::kPsCount, keys::FormatPsCount(new_count_))};
  for (uint32_t i = 0; i < new_count_; ++i) {
    FABPS_ASSIGN_OR_RETURN(std::string value,
                           EncodeCheckpointRecord(records[i]));
    ops.push_back(TxnOp::Put(keys::PsCheckpoint(i), value));
  }
  for (uint32_t i = new_count_; i < old_count_; ++i) {
    // ps/<i>/ : this index's lock (ours), address and record.
    ops.push_back(TxnOp::Delete(
        std::string(keys::kPsPrefix) + std::to_string(i) + "/", true));
  }
  FABPS_ASSIGN_OR_RETURN(TxnResult r, store_->Txn(compares, ops, {}, deadline));
  if (!r.succeeded) {
    return Status::FailedPrecondition(
        "the re-sharding's hold on the pserver indices was lost (its lease "
        "expired): nothing changed");
  }
  revoked_ = true;
  Status s = store_->Revoke(lease_, store_->DefaultDeadline());
  if (!s.ok()) {
    FABPS_LOG(WARNING) << "releasing the pserver indices: " << s.ToString()
                       << " (they free themselves within " << kLeaseTtlSeconds
                       << " s)";
  }
  return Status::OK();
}

Status WaitForPserverLocksFree(Store* store, Deadline deadline) {
  auto r = internal::WatchUntil<bool>(
      store, keys::kPsPrefix, deadline,
      [](const std::vector<KeyValue>& kvs,
         Status* why_not) -> std::optional<Result<bool>> {
        std::string held;
        for (const KeyValue& kv : kvs) {
          Result<keys::PsKeyParts> parts = keys::ParsePsKey(kv.key);
          if (parts.ok() && parts->leaf == keys::PsLeaf::kLock) {
            held += (held.empty() ? "" : "; ") + kv.key + " held by '" +
                    kv.value + "'";
          }
        }
        if (held.empty()) return Result<bool>(true);
        *why_not = Status::FailedPrecondition(held);
        return std::nullopt;
      });
  if (r.status().code() == Status::Code::kTimedOut) {
    return Status::TimedOut("pserver indices still held at the deadline (" +
                            r.status().message() + ")");
  }
  return r.status();
}

}  // namespace fabps::coord
