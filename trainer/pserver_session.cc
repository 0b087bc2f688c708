#include "trainer/pserver_session.h"

#include <utility>

#include "base/log.h"
#include "coord/store.h"
#include "pserver/rpc/init_config.h"
#include "trainer/trainer_id.h"

namespace fabps::trainer {

namespace ps = rpc::pserver;

PServerSession::PServerSession(const PServerClientOptions& options)
    : options_(options) {}

PServerSession::~PServerSession() {
  // The endpoint (and its progress thread, which calls OnCredit) goes first.
  endpoint_.reset();
}

Result<std::unique_ptr<PServerSession>> PServerSession::Open(
    const PServerClientOptions& options) {
  std::unique_ptr<PServerSession> s(new PServerSession(options));
  if (s->options_.trainer_id == 0) s->options_.trainer_id = RandomTrainerId();
  if (options.addresses.empty()) {
    coord::StoreOptions so;
    so.spec = options.store_spec;
    so.job = options.job;
    FABPS_ASSIGN_OR_RETURN(auto store, coord::OpenStore(so));
    s->discovery_ = std::make_unique<PServerDiscovery>(std::move(store));
  } else {
    s->discovery_ = std::make_unique<PServerDiscovery>(options.addresses);
  }
  FABPS_ASSIGN_OR_RETURN(
      std::vector<std::string> addresses,
      s->discovery_->Resolve(Deadline::InMs(options.init_wait_ms)));
  FABPS_RETURN_IF_ERROR(s->OpenConnections(addresses));
  s->election_ = std::make_unique<InitElection>(s->discovery_->store(),
                                                s->options_.trainer_id);
  transport::FabricOptions fo;
  fo.provider = options.provider;
  fo.interface_address = options.interface_address;
  FABPS_ASSIGN_OR_RETURN(s->fabric_, transport::OpenFabric(fo));
  s->credit_buf_.resize(64);
  FABPS_ASSIGN_OR_RETURN(
      s->credit_mr_,
      s->fabric_->Register(s->credit_buf_.data(), s->credit_buf_.size()));
  s->slots_ = std::make_unique<PushSlots>(addresses.size());
  FABPS_RETURN_IF_ERROR(s->OpenEndpoint());
  return s;
}

Status PServerSession::OpenConnections(
    const std::vector<std::string>& addresses) {
  std::vector<std::unique_ptr<PServerConnection>> fresh;
  for (size_t i = 0; i < addresses.size(); i++) {
    FABPS_ASSIGN_OR_RETURN(
        auto c, PServerConnection::Open(static_cast<uint32_t>(i), addresses[i],
                                        options_.rpc_timeout_ms));
    fresh.push_back(std::move(c));
  }
  conns_ = std::move(fresh);
  options_.addresses = addresses;
  return Status::OK();
}

Status PServerSession::OpenEndpoint() {
  FABPS_ASSIGN_OR_RETURN(
      endpoint_, fabric_->CreateEndpoint(transport::ProgressMode::kThread));
  PushSlots* table = slots_.get();
  endpoint_->SetImmediateHandler(
      [table](const transport::ImmediateEvent& e) { table->OnCredit(e.data); });
  return Status::OK();
}

Status PServerSession::Register(uint32_t i, Deadline deadline) {
  ps::TrainerHello hello;
  hello.trainer_id = options_.trainer_id;
  hello.fabric_address = endpoint_->address();
  hello.credit_region = credit_mr_->remote().Serialize();
  hello.provider = fabric_->provider();
  hello.max_slot_bytes = 0;
  FABPS_ASSIGN_OR_RETURN(PServerRegistration reg,
                         conns_[i]->Register(hello, deadline));
  FABPS_ASSIGN_OR_RETURN(transport::PeerId id,
                         endpoint_->AddPeer(reg.fabric_address));
  slots_->Reset(i, reg.num_slots);
  peers_[i] = Peer{id, std::move(reg)};
  if (staging_.size() != peers_.size()) staging_.resize(peers_.size());
  staging_[i].reset();
  return Status::OK();
}

// With a store: looks the pservers up again and, where one now serves at
// another address (restarted elsewhere), opens fresh connections. A job
// re-sharded to another pserver count is followed: pushes in flight fail,
// the endpoint is made afresh (its progress thread refers to the slot
// table, which is sized by the count) and the next EnsureReady learns the
// new layout.
Status PServerSession::Rediscover(Deadline deadline) {
  if (!discovery_->dynamic()) return Status::OK();
  FABPS_ASSIGN_OR_RETURN(std::vector<std::string> addrs,
                         discovery_->Resolve(deadline));
  if (addrs.size() != conns_.size()) {
    FABPS_LOG(INFO) << "trainer " << options_.trainer_id << ": the job now has "
                    << addrs.size() << " pservers (was " << conns_.size()
                    << "): following its new layout";
    endpoint_.reset();  // joins the progress thread
    ready_ = false;
    slots_->FailAll(Status::Unavailable("the job's pserver count changed"));
    slots_ = std::make_unique<PushSlots>(addrs.size());
    staging_.clear();
    for (auto& c : conns_) c->Close();
    FABPS_RETURN_IF_ERROR(OpenConnections(addrs));
    return OpenEndpoint();
  }
  if (addrs == options_.addresses) return Status::OK();
  FABPS_LOG(INFO) << "trainer " << options_.trainer_id
                  << ": the store names new pserver addresses";
  return OpenConnections(addrs);
}

// Waits until the parameters exist, learns the layout and registers with
// every pserver. While pserver 0 cannot be reached, the store is asked again
// for its address (it may have been restarted elsewhere while this trainer
// waited for the initialization).
Status PServerSession::EnsureReady(Deadline deadline) {
  if (ready_) return Status::OK();
  ps::InitConfig config;
  Status st = RetryWhileNotReady(
      [&] {
        Status s = conns_[0]->Call(
            "GetInitConfig", deadline,
            [&](ps::PServerClient& c) { c.GetInitConfig(config); });
        if (s.code() != Status::Code::kUnavailable) return s;
        Status found = Rediscover(deadline);
        return found.ok() ? s : found;
      },
      deadline, 50);
  if (!st.ok()) {
    return IsNotReady(st)
               ? st.WithContext("waiting for parameter initialization")
               : st;
  }
  FABPS_ASSIGN_OR_RETURN(pserver::InitSpec spec,
                         pserver::InitSpecFromThrift(config));
  if (spec.layout.num_pservers() != conns_.size()) {
    // Re-sharded between the lookup and this answer: the next call
    // reconnects and looks again.
    return Status::Unavailable(
        "the job's layout has " + std::to_string(spec.layout.num_pservers()) +
        " pservers, this client knows " + std::to_string(conns_.size()) +
        " (re-sharded meanwhile)");
  }
  layout_ = std::make_unique<Layout>(std::move(spec.layout));
  peers_.assign(conns_.size(), Peer{});
  for (uint32_t i = 0; i < conns_.size(); i++)
    FABPS_RETURN_IF_ERROR(Register(i, deadline));
  ready_ = true;
  return Status::OK();
}

Status PServerSession::Reconnect(Deadline deadline) {
  endpoint_.reset();  // joins the progress thread: no credit after this
  ready_ = false;
  slots_->FailAll(Status::Unavailable("pserver connection was reset"));
  for (auto& c : conns_) c->Close();
  FABPS_RETURN_IF_ERROR(Rediscover(deadline));
  if (!endpoint_) FABPS_RETURN_IF_ERROR(OpenEndpoint());
  FABPS_LOG(INFO) << "trainer " << options_.trainer_id
                  << ": reconnecting to the pservers";
  FABPS_RETURN_IF_ERROR(EnsureReady(deadline));
  broken_ = false;
  return Status::OK();
}

// A failure to get ready counts like a failed call: the next one
// reconnects, which asks the store for the addresses again (a pserver may
// have moved between this client's lookup and its registration, while
// pserver 0 still answers at its old address).
Status PServerSession::Prepare(Deadline deadline) {
  return Note(broken_ ? Reconnect(deadline) : EnsureReady(deadline));
}

Status PServerSession::Note(const Status& s) {
  if (!s.ok() && s.code() != Status::Code::kInvalidArgument &&
      s.code() != Status::Code::kNotFound) {
    broken_ = true;
  }
  return s;
}

bool PServerSession::StartsAtOnce(const std::vector<ParamBuffer>& buffers,
                                  bool push) {
  if (broken_ || !ready_) return false;
  if (!push) return true;
  std::vector<uint32_t> need(peers_.size(), 0);
  for (const ParamBuffer& b : buffers) {
    auto param = layout_->FindParam(b.name);
    if (!param.ok()) return true;
    for (uint32_t id = layout_->FirstBlockOf(*param);
         id < layout_->num_blocks() && layout_->blocks()[id].param == *param;
         id++) {
      need.at(layout_->blocks()[id].pserver)++;
    }
  }
  return slots_->HasFree(need);
}

Status PServerSession::CheckMode(bool with_step) const {
  for (size_t i = 0; i < peers_.size(); i++) {
    if (peers_[i].reg.sync != with_step) {
      return Status::FailedPrecondition(
          with_step ? "a push with a step: pserver " + std::to_string(i) +
                          " runs in async mode"
                    : std::string("the pservers run in sync mode "
                                  "(--mode sync): SendGrads and SendRows "
                                  "need a step"));
    }
  }
  return Status::OK();
}

Status PServerSession::WriteIntoSlot(uint32_t ps, uint32_t slot,
                                     const transport::MemoryRegion& region,
                                     size_t offset, size_t len,
                                     size_t remote_offset,
                                     const protocol::wire::PushImm& imm,
                                     const std::shared_ptr<TransferHandle>& h,
                                     Deadline deadline) {
  const Peer& p = peers_[ps];
  h->AddCreditPart();
  auto w =
      endpoint_->Write(p.id, region, offset, len, p.reg.landing, remote_offset,
                       protocol::wire::EncodePush(imm), deadline);
  if (!w.ok()) {
    slots_->Release(ps, slot);
    h->PartDone(w.status());
    return w.status();
  }
  h->AddOperation(*w);
  return Status::OK();
}

Result<uint64_t> PServerSession::ArenaOffset(uint32_t ps, uint32_t block,
                                             uint64_t bytes) const {
  const Peer& p = peers_[ps];
  auto loc = p.reg.blocks.find(block);
  if (loc == p.reg.blocks.end() || loc->second.second != bytes) {
    return Status::Corruption("pserver " + std::to_string(ps) +
                              " does not list block " + std::to_string(block) +
                              " with " + std::to_string(bytes) + " bytes");
  }
  return loc->second.first;
}

Result<RowsStaging*> PServerSession::StagingOf(uint32_t ps) {
  const Peer& p = peers_[ps];
  const size_t want = size_t{p.reg.num_slots} * p.reg.slot_bytes;
  if (staging_[ps] && staging_[ps]->bytes() == want) return staging_[ps].get();
  FABPS_ASSIGN_OR_RETURN(staging_[ps], RowsStaging::Create(*fabric_, want));
  return staging_[ps].get();
}

}  // namespace fabps::trainer
