#include "trainer/init_election.h"

#include <string>

#include "base/log.h"

namespace fabps::trainer {

namespace ps = rpc::pserver;

InitElection::InitElection(coord::Store* store, int64_t trainer_id)
    : store_(store), trainer_id_(trainer_id) {
  if (store_) {
    store_election_ = std::make_unique<coord::InitElection>(
        store_,
        coord::InitElectionOptions{"trainer " + std::to_string(trainer_id_)});
  }
}

InitElection::~InitElection() = default;

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
  if (store_election_) {
    FABPS_ASSIGN_OR_RETURN(bool won, store_election_->Begin(deadline));
    if (!won) return false;
    store_won_ = true;
    FABPS_LOG(INFO) << "trainer " << trainer_id_
                    << " holds init/lock: initializing the parameters";
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
  if (!store_won_) return;
  store_won_ = false;
  Status s = store_election_->Done(store_->DefaultDeadline());
  if (!s.ok()) FABPS_LOG(WARNING) << "putting init/done: " << s.ToString();
}

void InitElection::Abandon() {
  if (!store_won_) return;
  store_won_ = false;
  store_election_->Abandon(store_->DefaultDeadline());
}

}  // namespace fabps::trainer
