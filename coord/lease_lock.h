// LeaseLock: owning one key of the coordination store through a lease.
//
// The master's leader lock ("master/lock") and a pserver's claim on its index
// ("ps/<i>/lock") are both this (coord/protocol/ names the keys): the key is
// created only if absent, attached to a lease that this process keeps alive; it
// vanishes when the process dies (after the TTL) or releases it (at once), and
// another process takes it.
//
//   auto lock = LeaseLock::Acquire(store, "master/lock", {5, "host:7164"},
//                                  Deadline::Infinite(), cancelled);
//   ... every write the owner makes carries lock->Fence() as a compare ...
//   if (!(*lock)->held()) stop acting as the owner;
//   (*lock)->Release(store->DefaultDeadline());
//
// held() turns false, and on_lost runs once, when the lease is lost: the
// store said it expired, or no renewal succeeded for a whole TTL (etcd down);
// from that moment another process may own the key, so the owner must stop
// serving rather than risk two owners. Fence() is a compare that holds only
// while the key is the one this lock created (same create revision), so a
// deposed owner's fenced writes fail instead of overwriting the new owner's.
//
// Thread safety: held(), Fence(), lease() and key() from any thread; Release
// and the destructor from one. The Store must outlive the lock. Destroying a
// lock without Release does not free the key: the Store keeps renewing its
// lease until the Store itself is destroyed, then the key expires with the
// lease after its TTL (as after a crash).
#ifndef FABPS_COORD_LEASE_LOCK_H_
#define FABPS_COORD_LEASE_LOCK_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/store.h"

namespace fabps::coord {

struct LeaseLockOptions {
  int64_t ttl_seconds = 5;  // >= 2 (both backends' minimum)
  std::string value;        // stored under the key: who owns it, for humans
  // Runs once, on the store's keep-alive thread, when the lease is lost.
  std::function<void(const Status& why)> on_lost;
  // How often a waiting Acquire tries again.
  int64_t retry_ms = 200;
};

class LeaseLock {
 public:
  // Takes `key` if it is absent, else FailedPrecondition naming the owner.
  // Unavailable/TimedOut when the store cannot be reached in time.
  static Result<std::unique_ptr<LeaseLock>> TryAcquire(
      Store* store, const std::string& key, const LeaseLockOptions& options,
      Deadline deadline);
  // Waits until `key` can be taken (the owner released it or its lease
  // expired), riding out store outages, until `deadline` (TimedOut) or until
  // `cancelled` returns true (Cancelled). `cancelled` may be empty.
  static Result<std::unique_ptr<LeaseLock>> Acquire(
      Store* store, const std::string& key, const LeaseLockOptions& options,
      Deadline deadline, const std::function<bool()>& cancelled = {});
  // Takes the first of `keys` (non-empty) that is free, trying them in
  // order, waiting as Acquire does while all are taken; `*which` receives
  // its position in `keys`.
  static Result<std::unique_ptr<LeaseLock>> AcquireAny(
      Store* store, const std::vector<std::string>& keys,
      const LeaseLockOptions& options, Deadline deadline,
      const std::function<bool()>& cancelled, size_t* which);

  ~LeaseLock();
  LeaseLock(const LeaseLock&) = delete;
  LeaseLock& operator=(const LeaseLock&) = delete;

  bool held() const;
  const std::string& key() const { return key_; }
  LeaseId lease() const { return lease_; }
  int64_t create_revision() const { return create_revision_; }
  Compare Fence() const;
  // Puts `key` = `value` only while the lock is this one (under Fence()),
  // attached to lease() when `with_lease` (the key then vanishes with the
  // lock) or to no lease. FailedPrecondition when the lock was lost; the
  // store's errors otherwise.
  Status PutIfHeld(const std::string& key, const std::string& value,
                   bool with_lease, Deadline deadline);
  // Revokes the lease: the key and every key put with lease() vanish.
  Status Release(Deadline deadline);

 private:
  struct Shared;
  LeaseLock(Store* store, std::string key, LeaseId lease, int64_t rev,
            std::shared_ptr<Shared> shared);
  // A lease granted and kept alive for attempts on keys; whoever holds it
  // and takes no key revokes it (GiveBack).
  struct Pending {
    LeaseId id = 0;
    std::shared_ptr<Shared> shared;
  };
  static Result<Pending> Grant(Store* store, const LeaseLockOptions& options,
                               Deadline deadline);
  static void GiveBack(Store* store, const Pending& pending);
  // One attempt on each of `keys` in order with `pending`'s lease; nullptr
  // with *owner set when all are taken. On success the lock owns the lease.
  static Result<std::unique_ptr<LeaseLock>> TryKeys(
      Store* store, const std::vector<std::string>& keys,
      const LeaseLockOptions& options, Deadline deadline,
      const Pending& pending, size_t* which, std::string* owner);

  Store* store_;
  std::string key_;
  LeaseId lease_;
  int64_t create_revision_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace fabps::coord

#endif  // FABPS_COORD_LEASE_LOCK_H_
