// LeaseKeeper: the keep-alive thread shared by the backends (internal).
//
// Renews each lease it holds about every TTL/3 through a backend-supplied
// `renew` function (KeepAliveOnce). A lease is declared lost, and its
// callback runs once on the keeper's thread, when `renew` returns kNotFound,
// or when no renewal has succeeded for a whole TTL measured from the moment
// the last successful request was sent (the server may have expired it).
// Failed renewals are retried every 200 ms (or sooner near the TTL).
//
// Thread safety: all methods may be called concurrently; `renew` and the
// callbacks run on the keeper's thread without its lock held.
#ifndef FABPS_COORD_LEASE_KEEPER_H_
#define FABPS_COORD_LEASE_KEEPER_H_

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/store.h"

namespace fabps::coord::internal {

class LeaseKeeper {
 public:
  using RenewFn = std::function<Result<int64_t>(LeaseId, Deadline)>;
  // `name` appears in log messages.
  LeaseKeeper(std::string name, RenewFn renew);
  // Stops and joins the thread; no callback runs after it returns.
  ~LeaseKeeper();

  // Starts keeping `id` (TTL `ttl_seconds`) alive; the caller has just
  // granted or renewed it. kFailedPrecondition when already kept.
  Status Add(LeaseId id, int64_t ttl_seconds, LeaseLostCallback on_lost);
  // Stops keeping `id` alive (revoke); LeaseAlive(id) is then false.
  void Remove(LeaseId id);
  // False once `id` was lost or removed; true for ids never added.
  bool Alive(LeaseId id) const;

 private:
  struct Kept {
    int64_t ttl_ms;
    SteadyClock::time_point last_ok;     // send time of the last good renewal
    SteadyClock::time_point next_renew;  // when to try next
    LeaseLostCallback on_lost;
  };
  void Run();

  const std::string name_;
  const RenewFn renew_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<LeaseId, Kept> kept_;
  std::set<LeaseId> dead_;  // lost or removed
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace fabps::coord::internal

#endif  // FABPS_COORD_LEASE_KEEPER_H_
