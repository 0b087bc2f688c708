#include "coord/protocol/pserver_claim.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "base/log.h"
#include "coord/protocol/change_waiter.h"
#include "coord/protocol/job_keys.h"

namespace fabps::coord {
namespace {

// Step (1): `key` (ps/count, ps/mode) is put by the first pserver and
// checked by the rest: `check` says whether the value found agrees.
Status AgreeOn(Store* store, const std::string& key, const std::string& want,
               const std::function<Status(const std::string& have)>& check,
               int64_t retry_ms, Deadline deadline,
               const std::function<bool()>& cancelled) {
  std::string logged;  // the last error logged: each new one once
  for (;;) {
    auto r = store->Txn({Compare::Absent(key)}, {TxnOp::Put(key, want)},
                        {TxnOp::Get(key)},
                        internal::Sooner(deadline, store->DefaultDeadline()));
    if (r.ok()) {
      if (r->succeeded) return Status::OK();
      if (r->results.empty() || r->results[0].kvs.empty())
        continue;  // deleted between the compare and the get: try again
      return check(r->results[0].kvs[0].value);
    }
    Status::Code c = r.status().code();
    if (c != Status::Code::kUnavailable && c != Status::Code::kTimedOut)
      return r.status().WithContext("agreeing on " + key);
    if (r.status().ToString() != logged) {
      logged = r.status().ToString();
      FABPS_LOG(WARNING) << "store: " << logged << " (retrying)";
    }
    // Look at `cancelled` often: a signal must end the wait at once.
    Deadline pause = internal::Sooner(deadline, Deadline::InMs(retry_ms));
    while (!pause.Expired()) {
      if (cancelled && cancelled())
        return Status::Cancelled("cancelled while the store was unreachable");
      std::this_thread::sleep_for(std::chrono::milliseconds(
          std::min<int64_t>(20, pause.RemainingMs())));
    }
    if (cancelled && cancelled())
      return Status::Cancelled("cancelled while the store was unreachable");
    if (deadline.Expired())
      return Status::TimedOut("store unreachable: " + r.status().ToString())
          .WithContext("agreeing on " + key);
  }
}

}  // namespace

Result<std::unique_ptr<PserverClaim>> PserverClaim::Claim(
    Store* store, const PserverClaimOptions& options, Deadline deadline,
    const std::function<bool()>& cancelled) {
  uint32_t n = options.num_pservers;
  if (n == 0 || n > keys::kMaxPservers)
    return Status::InvalidArgument("pserver claim: num_pservers " +
                                   std::to_string(n) + " is not in 1.." +
                                   std::to_string(keys::kMaxPservers));
  if (options.index && *options.index >= n)
    return Status::InvalidArgument(
        "pserver claim: index " + std::to_string(*options.index) +
        " is not below num_pservers " + std::to_string(n));
  const std::string count = keys::FormatPsCount(n);
  FABPS_RETURN_IF_ERROR(AgreeOn(
      store, keys::kPsCount, count,
      [&](const std::string& have) -> Status {
        FABPS_ASSIGN_OR_RETURN(uint32_t found, keys::ParsePsCount(have));
        if (found == n) return Status::OK();
        return Status::FailedPrecondition("--num-pservers " + count +
                                          " but the job has ps/count " + have);
      },
      options.retry_ms, deadline, cancelled));
  const std::string mode = keys::FormatPsMode(options.mode);
  FABPS_RETURN_IF_ERROR(AgreeOn(
      store, keys::kPsMode, mode,
      [&](const std::string& have) -> Status {
        FABPS_ASSIGN_OR_RETURN(keys::PsMode found, keys::ParsePsMode(have));
        if (found == options.mode) return Status::OK();
        return Status::FailedPrecondition("this pserver runs '" + mode +
                                          "' but the job has ps/mode '" + have +
                                          "'");
      },
      options.retry_ms, deadline, cancelled));
  std::vector<std::string> lock_keys;
  if (options.index) {
    lock_keys.push_back(keys::PsLock(*options.index));
  } else {
    for (uint32_t i = 0; i < n; i++) lock_keys.push_back(keys::PsLock(i));
  }
  LeaseLockOptions lo;
  lo.ttl_seconds = options.ttl_seconds;
  lo.value = options.owner;
  lo.on_lost = options.on_lost;
  lo.retry_ms = options.retry_ms;
  size_t which = 0;
  FABPS_ASSIGN_OR_RETURN(
      std::unique_ptr<LeaseLock> lock,
      LeaseLock::AcquireAny(store, lock_keys, lo, deadline, cancelled, &which));
  uint32_t index =
      options.index ? *options.index : static_cast<uint32_t>(which);
  return std::unique_ptr<PserverClaim>(
      new PserverClaim(index, std::move(lock)));
}

Status PserverClaim::PublishAddress(const std::string& host_port,
                                    Deadline deadline) {
  return lock_->PutIfHeld(keys::PsAddr(index_), host_port,
                          /*with_lease=*/true, deadline);
}

Status PserverClaim::RecordCheckpoint(const CheckpointRecord& record,
                                      Deadline deadline) {
  FABPS_ASSIGN_OR_RETURN(std::string value, EncodeCheckpointRecord(record));
  return lock_->PutIfHeld(keys::PsCheckpoint(index_), value,
                          /*with_lease=*/false, deadline);
}

Status PserverClaim::Release(Deadline deadline) {
  return lock_->Release(deadline);
}

}  // namespace fabps::coord
