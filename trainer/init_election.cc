#include "trainer/init_election.h"

#include <string>

#include "base/log.h"

namespace fabps::trainer {

namespace ps = rpc::pserver;

namespace {
constexpr const char* kInitLock = "init/lock";
constexpr const char* kInitDone = "init/done";
constexpr int kInitLockTtlSeconds = 5;
}  // namespace

InitElection::InitElection(coord::Store* store, int64_t trainer_id)
    : store_(store), trainer_id_(trainer_id) {}

InitElection::~InitElection() = default;

Result<bool> InitElection::WinStore(Deadline deadline) {
  coord::LeaseLockOptions lo;
  lo.ttl_seconds = kInitLockTtlSeconds;
  lo.value = "trainer " + std::to_string(trainer_id_);
  for (;;) {
    if (store_->Get(kInitDone, store_->DefaultDeadline()).ok()) return false;
    auto lock = coord::LeaseLock::TryAcquire(store_, kInitLock, lo,
                                             store_->DefaultDeadline());
    if (lock.ok()) {
      // Initialized between our two reads? Then nothing to do.
      if (store_->Get(kInitDone, store_->DefaultDeadline()).ok()) {
        (void)(*lock)->Release(store_->DefaultDeadline());
        return false;
      }
      lock_ = std::move(*lock);
      FABPS_LOG(INFO) << "trainer " << trainer_id_
                      << " holds init/lock: initializing the parameters";
      return true;
    }
    if (deadline.Expired()) {
      return Status::TimedOut("parameters not initialized by init_wait_ms: " +
                              lock.status().ToString());
    }
    PauseMs(200);
  }
}

Result<bool> InitElection::TakeGrant(PServerConnection& s, Deadline deadline) {
  for (;;) {
    ps::InitGrantKind::type grant{};
    Status st = s.Call("BeginInitParams", [&](ps::PServerClient& c) {
      grant = c.BeginInitParams(trainer_id_);
    });
    if (st.code() == Status::Code::kUnavailable && !deadline.Expired()) {
      PauseMs(100);  // pserver (re)starting
      continue;
    }
    FABPS_RETURN_IF_ERROR(st);
    if (grant == ps::InitGrantKind::GRANTED) return true;
    if (grant == ps::InitGrantKind::ALREADY_INITIALIZED) return false;
    if (deadline.Expired()) {
      return Status::TimedOut(
          "another trainer holds the init grant of pserver " +
          std::to_string(s.index()));
    }
    PauseMs(100);
  }
}

Result<bool> InitElection::Begin(
    bool selected,
    const std::vector<std::unique_ptr<PServerConnection>>& pservers,
    Deadline deadline) {
  if (store_) {
    FABPS_ASSIGN_OR_RETURN(bool won, WinStore(deadline));
    if (!won) return false;
  } else if (!selected) {
    return false;
  }
  for (const auto& s : pservers) {
    auto granted = TakeGrant(*s, deadline);
    if (!granted.ok()) {
      Abandon();
      return granted.status();
    }
    if (!*granted) {
      Done();
      return false;
    }
  }
  return true;
}

void InitElection::Done() {
  if (!store_ || !lock_) return;
  auto r = store_->Put(kInitDone, "trainer " + std::to_string(trainer_id_),
                       coord::kNoLease, store_->DefaultDeadline());
  if (!r.ok()) {
    FABPS_LOG(WARNING) << "putting init/done: " << r.status().ToString();
  }
  (void)lock_->Release(store_->DefaultDeadline());
  lock_.reset();
}

void InitElection::Abandon() {
  if (!store_ || !lock_) return;
  (void)lock_->Release(store_->DefaultDeadline());
  lock_.reset();
}

}  // namespace fabps::trainer
