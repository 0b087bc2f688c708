#include "coord/lease_keeper.h"

#include <algorithm>
#include <vector>

#include "base/log.h"
#include "base/thread_name.h"

namespace fabps::coord::internal {

using std::chrono::milliseconds;

LeaseKeeper::LeaseKeeper(std::string name, RenewFn renew)
    : name_(std::move(name)), renew_(std::move(renew)) {
  thread_ = std::thread([this] {
    SetThreadName("fabps-lease");
    Run();
  });
}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Status LeaseKeeper::Add(LeaseId id, int64_t ttl_seconds,
                        LeaseLostCallback on_lost) {
  if (ttl_seconds < 1)
    return Status::InvalidArgument("lease ttl must be >= 1 s");
  std::lock_guard<std::mutex> lock(mu_);
  if (kept_.count(id)) {
    return Status::FailedPrecondition("lease " + std::to_string(id) +
                                      " is already kept alive");
  }
  auto now = SteadyClock::now();
  Kept k;
  k.ttl_ms = ttl_seconds * 1000;
  k.last_ok = now;
  k.next_renew = now + milliseconds(k.ttl_ms / 3);
  k.on_lost = std::move(on_lost);
  kept_.emplace(id, std::move(k));
  dead_.erase(id);
  cv_.notify_all();
  return Status::OK();
}

void LeaseKeeper::Remove(LeaseId id) {
  std::lock_guard<std::mutex> lock(mu_);
  kept_.erase(id);
  dead_.insert(id);
}

bool LeaseKeeper::Alive(LeaseId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return dead_.count(id) == 0;
}

void LeaseKeeper::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    auto now = SteadyClock::now();
    // Pick the lease due first.
    LeaseId due = kNoLease;
    SteadyClock::time_point when = now + milliseconds(1000);
    for (const auto& [id, k] : kept_) {
      if (k.next_renew < when) {
        when = k.next_renew;
        due = id;
      }
    }
    if (due == kNoLease || when > now) {
      cv_.wait_until(lock, when);
      continue;
    }
    Kept& k = kept_.at(due);
    auto lost_at = k.last_ok + milliseconds(k.ttl_ms);
    // Give up on this attempt in time to retry before the TTL runs out.
    auto attempt_end = std::min(
        now + milliseconds(std::max<int64_t>(k.ttl_ms / 3, 200)), lost_at);
    lock.unlock();
    auto sent = SteadyClock::now();
    Result<int64_t> r = renew_(due, Deadline(attempt_end));
    lock.lock();
    auto it = kept_.find(due);
    if (it == kept_.end()) continue;  // removed meanwhile
    Kept& kk = it->second;
    now = SteadyClock::now();
    Status lost;
    if (r.ok() && *r > 0) {
      kk.ttl_ms = *r * 1000;
      kk.last_ok = sent;
      kk.next_renew = sent + milliseconds(kk.ttl_ms / 3);
      continue;
    }
    if (r.ok() || r.status().code() == Status::Code::kNotFound) {
      lost = Status::NotFound("lease " + std::to_string(due) +
                              " no longer exists in the store");
    } else if (now >= kk.last_ok + milliseconds(kk.ttl_ms)) {
      lost = Status::Unavailable(
          "lease " + std::to_string(due) +
          " not renewed for its whole TTL: " + r.status().ToString());
    } else {
      FABPS_LOG(WARNING) << name_ << ": renewing lease " << due
                         << " failed, retrying: " << r.status().ToString();
      kk.next_renew = std::min(now + milliseconds(200),
                               kk.last_ok + milliseconds(kk.ttl_ms));
      continue;
    }
    LeaseLostCallback cb = std::move(kk.on_lost);
    kept_.erase(it);
    dead_.insert(due);
    FABPS_LOG(WARNING) << name_ << ": lease lost: " << lost.ToString();
    if (cb) {
      lock.unlock();
      cb(due, lost);
      lock.lock();
    }
  }
}

}  // namespace fabps::coord::internal
