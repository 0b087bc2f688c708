#include "coord/lease_lock.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/log.h"

namespace fabps::coord {

struct LeaseLock::Shared {
  std::atomic<bool> held{true};
  std::atomic<bool> owner{false};  // the lease backs a key we created
  std::function<void(const Status&)> on_lost;
  std::string key;
};

namespace {

Deadline Sooner(Deadline a, Deadline b) { return a.time() < b.time() ? a : b; }

}  // namespace

LeaseLock::LeaseLock(Store* store, std::string key, LeaseId lease, int64_t rev,
                     std::shared_ptr<Shared> shared)
    : store_(store),
      key_(std::move(key)),
      lease_(lease),
      create_revision_(rev),
      shared_(std::move(shared)) {}

LeaseLock::~LeaseLock() = default;

bool LeaseLock::held() const {
  return shared_->held.load() && store_->LeaseAlive(lease_);
}

Compare LeaseLock::Fence() const {
  Compare c;
  c.key = key_;
  c.target = Compare::Target::kCreateRevision;
  c.op = Compare::Op::kEqual;
  c.number = create_revision_;
  return c;
}

Status LeaseLock::Release(Deadline deadline) {
  shared_->held = false;
  Status s = store_->Revoke(lease_, deadline);
  if (s.code() == Status::Code::kNotFound) return Status::OK();  // expired
  return s;
}

Result<std::unique_ptr<LeaseLock>> LeaseLock::TryKeys(
    Store* store, const std::vector<std::string>& keys,
    const LeaseLockOptions& options, Deadline deadline, size_t* which,
    std::string* owner) {
  if (options.ttl_seconds < 2)
    return Status::InvalidArgument("lease lock: ttl below 2 seconds");
  FABPS_ASSIGN_OR_RETURN(
      Lease lease,
      store->GrantLease(options.ttl_seconds,
                        Sooner(deadline, store->DefaultDeadline())));
  auto shared = std::make_shared<Shared>();
  shared->on_lost = options.on_lost;
  Status ka =
      store->StartKeepAlive(lease.id, [shared](LeaseId, const Status& why) {
        shared->held = false;
        if (!shared->owner.load()) return;
        FABPS_LOG(ERROR) << "lost the lease on " << shared->key << ": "
                         << why.ToString();
        if (shared->on_lost) shared->on_lost(why);
      });
  auto give_back = [&] {
    (void)store->Revoke(lease.id, Sooner(deadline, store->DefaultDeadline()));
  };
  if (!ka.ok()) {
    give_back();
    return ka;
  }
  for (size_t i = 0; i < keys.size(); i++) {
    auto r = store->Txn({Compare::Absent(keys[i])},
                        {TxnOp::Put(keys[i], options.value, lease.id)},
                        {TxnOp::Get(keys[i])},
                        Sooner(deadline, store->DefaultDeadline()));
    if (!r.ok()) {
      give_back();
      return r.status();
    }
    if (r->succeeded) {
      shared->key = keys[i];
      shared->owner = true;
      if (!shared->held.load()) {
        give_back();
        return Status::Unavailable("lease lock: lease lost while acquiring " +
                                   keys[i]);
      }
      *which = i;
      return std::unique_ptr<LeaseLock>(
          new LeaseLock(store, keys[i], lease.id, r->revision, shared));
    }
    if (!r->results.empty() && !r->results[0].kvs.empty())
      *owner = r->results[0].kvs[0].value;
  }
  give_back();
  return std::unique_ptr<LeaseLock>();
}

Result<std::unique_ptr<LeaseLock>> LeaseLock::TryAcquire(
    Store* store, const std::string& key, const LeaseLockOptions& options,
    Deadline deadline) {
  size_t which = 0;
  std::string owner;
  FABPS_ASSIGN_OR_RETURN(
      auto lock, TryKeys(store, {key}, options, deadline, &which, &owner));
  if (!lock) {
    return Status::FailedPrecondition(key + " is held by '" + owner + "'");
  }
  return lock;
}

Result<std::unique_ptr<LeaseLock>> LeaseLock::AcquireKeys(
    Store* store, const std::vector<std::string>& keys,
    const LeaseLockOptions& options, Deadline deadline,
    const std::function<bool()>& cancelled, size_t* which) {
  bool logged = false;
  const std::string what = keys[0] + (keys.size() > 1 ? "..." : "");
  for (;;) {
    std::string owner;
    auto r = TryKeys(store, keys, options, deadline, which, &owner);
    if (r.ok() && *r) return std::move(*r);
    if (!r.ok()) {
      Status::Code c = r.status().code();
      if (c != Status::Code::kUnavailable && c != Status::Code::kTimedOut &&
          c != Status::Code::kNotFound) {
        return r.status();
      }
      FABPS_LOG(WARNING) << "lease lock " << what << ": "
                         << r.status().ToString() << " (retrying)";
    } else if (!logged) {
      logged = true;
      FABPS_LOG(INFO) << "waiting for " << what << ", held by '" << owner
                      << "'";
    }
    if (cancelled && cancelled())
      return Status::Cancelled("lease lock: cancelled while waiting");
    if (deadline.Expired())
      return Status::TimedOut("lease lock: " + what + " still taken");
    int64_t wait = std::min<int64_t>(options.retry_ms, deadline.RemainingMs());
    std::this_thread::sleep_for(std::chrono::milliseconds(wait));
  }
}

Result<std::unique_ptr<LeaseLock>> LeaseLock::AcquireFirstFree(
    Store* store, const std::string& prefix, const std::string& suffix,
    uint32_t n, const LeaseLockOptions& options, Deadline deadline,
    const std::function<bool()>& cancelled, uint32_t* index) {
  if (n == 0) return Status::InvalidArgument("lease lock: no keys");
  std::vector<std::string> keys;
  for (uint32_t i = 0; i < n; i++)
    keys.push_back(prefix + std::to_string(i) + suffix);
  size_t which = 0;
  FABPS_ASSIGN_OR_RETURN(auto lock, AcquireKeys(store, keys, options, deadline,
                                                cancelled, &which));
  *index = static_cast<uint32_t>(which);
  return lock;
}

Result<std::unique_ptr<LeaseLock>> LeaseLock::Acquire(
    Store* store, const std::string& key, const LeaseLockOptions& options,
    Deadline deadline, const std::function<bool()>& cancelled) {
  size_t which = 0;
  return AcquireKeys(store, {key}, options, deadline, cancelled, &which);
}

}  // namespace fabps::coord
