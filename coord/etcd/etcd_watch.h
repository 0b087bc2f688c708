// Watches on etcd (internal to coord/etcd/): each watch runs one streaming
// POST /v3/watch on its own thread, through curl's multi interface so that
// Cancel wakes it at once. After an error it re-establishes the stream (next
// endpoint, back-off up to 500 ms) from the next revision not yet delivered,
// so every change is delivered once and in order across outages. A
// compacted start revision ends the watch with kFailedPrecondition.
#ifndef FABPS_COORD_ETCD_ETCD_WATCH_H_
#define FABPS_COORD_ETCD_ETCD_WATCH_H_

#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "coord/etcd/etcd_http.h"
#include "coord/store.h"

namespace fabps::coord::etcd {

// The live watches of one store, so that closing the store ends them while
// each may still outlive it.
struct WatchRegistry {
  std::mutex mu;
  std::set<Watch*> live;

  void CancelAll() {
    std::lock_guard<std::mutex> lock(mu);
    for (Watch* w : live) w->Cancel();
    live.clear();
  }
};

// Starts a watch of [key, range_end) (range_end "" = the key alone) and
// waits until etcd has created it, up to `deadline` (kUnavailable if not).
// Keys in events are made relative by removing `job_prefix`.
Result<std::unique_ptr<Watch>> StartEtcdWatch(
    std::shared_ptr<EtcdHttp> http, std::shared_ptr<WatchRegistry> registry,
    std::string job_prefix, std::string key, std::string range_end,
    int64_t start_revision, Deadline deadline);

}  // namespace fabps::coord::etcd

#endif  // FABPS_COORD_ETCD_ETCD_WATCH_H_
