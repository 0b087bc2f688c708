#include "coord/protocol/init_election.h"

#include "base/log.h"
#include "coord/protocol/change_waiter.h"
#include "coord/protocol/job_keys.h"

namespace fabps::coord {

using internal::Sooner;

InitElection::InitElection(Store* store, InitElectionOptions options)
    : store_(store), options_(std::move(options)) {}

InitElection::~InitElection() { Abandon(store_->DefaultDeadline()); }

bool InitElection::holding() const { return lock_ && lock_->held(); }

Result<bool> InitElection::Begin(Deadline deadline) {
  if (lock_) return true;
  LeaseLockOptions lo;
  lo.ttl_seconds = options_.ttl_seconds;
  lo.value = options_.owner;
  internal::ChangeWaiter waiter(store_, keys::kInitPrefix);
  Status last;
  for (;;) {
    auto r = store_->Range(keys::kInitPrefix,
                           Sooner(deadline, store_->DefaultDeadline()));
    int64_t seen = 0;
    if (r.ok()) {
      seen = r->revision;
      const KeyValue* holder = nullptr;
      for (const KeyValue& kv : r->kvs) {
        if (kv.key == keys::kInitDone) return false;
        if (kv.key == keys::kInitLock) holder = &kv;
      }
      if (holder != nullptr) {
        last = Status::FailedPrecondition("init/lock is held by '" +
                                          holder->value + "'");
      } else {
        auto lock =
            LeaseLock::TryAcquire(store_, keys::kInitLock, lo,
                                  Sooner(deadline, store_->DefaultDeadline()));
        if (lock.ok()) {
          // init/done may have been put between the read and the take.
          auto done = store_->Get(keys::kInitDone, store_->DefaultDeadline());
          if (done.status().code() == Status::Code::kNotFound) {
            lock_ = std::move(*lock);
            return true;
          }
          (void)(*lock)->Release(store_->DefaultDeadline());
          if (done.ok()) return false;
          last = done.status();
        } else {
          last = lock.status();
        }
      }
    } else {
      last = r.status();
    }
    if (!waiter.Wait(seen, deadline))
      return Status::TimedOut("parameters not initialized by the deadline: " +
                              last.ToString());
  }
}

Status InitElection::Done(Deadline deadline) {
  auto r = store_->Put(keys::kInitDone, options_.owner, kNoLease, deadline);
  // The store's own deadline: the caller's may be spent, and a lock left
  // behind would make the others wait a whole TTL.
  Abandon(store_->DefaultDeadline());
  if (!r.ok()) return r.status().WithContext("putting init/done");
  return Status::OK();
}

void InitElection::Abandon(Deadline deadline) {
  if (!lock_) return;
  Status s = lock_->Release(deadline);
  if (!s.ok()) FABPS_LOG(WARNING) << "releasing init/lock: " << s.ToString();
  lock_.reset();
}

}  // namespace fabps::coord
