#include "coord/lease_lock.h"

#include <algorithm>
#include <chrono>
#include <optional>
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

Status LeaseLock::PutIfHeld(const std::string& key, const std::string& value,
                            bool with_lease, Deadline deadline) {
  auto r = store_->Txn({Fence()},
                       {TxnOp::Put(key, value, with_lease ? lease_ : kNoLease)},
                       {}, deadline);
  if (!r.ok()) return r.status().WithContext("put " + key);
  if (!r->succeeded)
    return Status::FailedPrecondition("put " + key + ": lost " + key_);
  return Status::OK();
}

Result<LeaseLock::Pending> LeaseLock::Grant(Store* store,
                                            const LeaseLockOptions& options,
                                            Deadline deadline) {
  if (options.ttl_seconds < 2)
    return Status::InvalidArgument("lease lock: ttl below 2 seconds");
  FABPS_ASSIGN_OR_RETURN(
      Lease lease,
      store->GrantLease(options.ttl_seconds,
                        Sooner(deadline, store->DefaultDeadline())));
  Pending p;
  p.id = lease.id;
  p.shared = std::make_shared<Shared>();
  p.shared->on_lost = options.on_lost;
  auto shared = p.shared;
  Status ka =
      store->StartKeepAlive(lease.id, [shared](LeaseId, const Status& why) {
        shared->held = false;
        if (!shared->owner.load()) return;
        FABPS_LOG(ERROR) << "lost the lease on " << shared->key << ": "
                         << why.ToString();
        if (shared->on_lost) shared->on_lost(why);
      });
  if (!ka.ok()) {
    GiveBack(store, p);
    return ka;
  }
  return p;
}

// With the store's own deadline, not the caller's (which may have passed):
// the revoke also ends the keep-alive.
void LeaseLock::GiveBack(Store* store, const Pending& pending) {
  (void)store->Revoke(pending.id, store->DefaultDeadline());
}

Result<std::unique_ptr<LeaseLock>> LeaseLock::TryKeys(
    Store* store, const std::vector<std::string>& keys,
    const LeaseLockOptions& options, Deadline deadline, const Pending& pending,
    size_t* which, std::string* owner) {
  for (size_t i = 0; i < keys.size(); i++) {
    FABPS_ASSIGN_OR_RETURN(
        TxnResult r,
        store->Txn({Compare::Absent(keys[i])},
                   {TxnOp::Put(keys[i], options.value, pending.id)},
                   {TxnOp::Get(keys[i])},
                   Sooner(deadline, store->DefaultDeadline())));
    if (r.succeeded) {
      pending.shared->key = keys[i];
      pending.shared->owner = true;
      if (!pending.shared->held.load()) {
        return Status::Unavailable("lease lock: lease lost while acquiring " +
                                   keys[i]);
      }
      *which = i;
      return std::unique_ptr<LeaseLock>(new LeaseLock(
          store, keys[i], pending.id, r.revision, pending.shared));
    }
    if (!r.results.empty() && !r.results[0].kvs.empty())
      *owner = r.results[0].kvs[0].value;
  }
  return std::unique_ptr<LeaseLock>();
}

Result<std::unique_ptr<LeaseLock>> LeaseLock::TryAcquire(
    Store* store, const std::string& key, const LeaseLockOptions& options,
    Deadline deadline) {
  FABPS_ASSIGN_OR_RETURN(Pending pending, Grant(store, options, deadline));
  size_t which = 0;
  std::string owner;
  auto lock = TryKeys(store, {key}, options, deadline, pending, &which, &owner);
  if (lock.ok() && *lock) return lock;
  GiveBack(store, pending);
  if (!lock.ok()) return lock.status();
  return Status::FailedPrecondition(key + " is held by '" + owner + "'");
}

// One lease serves every attempt while it lives: a new one is granted only
// after it was lost (expired during a store outage) or an attempt failed.
Result<std::unique_ptr<LeaseLock>> LeaseLock::AcquireAny(
    Store* store, const std::vector<std::string>& keys,
    const LeaseLockOptions& options, Deadline deadline,
    const std::function<bool()>& cancelled, size_t* which) {
  if (keys.empty()) return Status::InvalidArgument("lease lock: no keys");
  bool logged = false;
  const std::string what = keys[0] + (keys.size() > 1 ? "..." : "");
  std::optional<Pending> pending;
  auto give_back = [&] {
    if (pending) GiveBack(store, *pending);
    pending.reset();
  };
  for (;;) {
    if (pending && !pending->shared->held.load()) give_back();
    std::string owner;
    Result<std::unique_ptr<LeaseLock>> r = std::unique_ptr<LeaseLock>();
    if (!pending) {
      auto granted = Grant(store, options, deadline);
      if (granted.ok()) {
        pending = std::move(granted).value();
      } else {
        r = granted.status();
      }
    }
    if (pending)
      r = TryKeys(store, keys, options, deadline, *pending, which, &owner);
    if (r.ok() && *r) return std::move(*r);
    if (!r.ok()) {
      give_back();
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
    if (cancelled && cancelled()) {
      give_back();
      return Status::Cancelled("lease lock: cancelled while waiting");
    }
    if (deadline.Expired()) {
      give_back();
      return Status::TimedOut("lease lock: " + what + " still taken");
    }
    int64_t wait = std::min<int64_t>(options.retry_ms, deadline.RemainingMs());
    std::this_thread::sleep_for(std::chrono::milliseconds(wait));
  }
}

Result<std::unique_ptr<LeaseLock>> LeaseLock::Acquire(
    Store* store, const std::string& key, const LeaseLockOptions& options,
    Deadline deadline, const std::function<bool()>& cancelled) {
  size_t which = 0;
  return AcquireAny(store, {key}, options, deadline, cancelled, &which);
}

}  // namespace fabps::coord
