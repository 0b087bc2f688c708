// PServerClient composed of its parts: the session (discovery, connections,
// endpoint, registration and reconnect), the dense path, the rows path, the
// initialization and the rules' control (learning rates). The public calls take
// the client's lock, prepare the session where a call moves data, and delegate.
#include "trainer/pserver_client.h"

#include <algorithm>
#include <mutex>
#include <optional>

#include "protocol/wire.h"
#include "pserver/rpc/table_status.h"
#include "trainer/dense_path.h"
#include "trainer/param_init.h"
#include "trainer/pserver_connection.h"
#include "trainer/pserver_session.h"
#include "trainer/rows_path.h"
#include "trainer/rule_control.h"
#include "trainer/transfer_handle.h"
#include "transport/registration_cache.h"

namespace fabps::trainer {

namespace ps = rpc::pserver;

struct PServerClient::Impl {
  explicit Impl(std::unique_ptr<PServerSession> s)
      : session(std::move(s)),
        dense(session.get()),
        rows(session.get()),
        init(session.get()),
        rules(session.get()) {}

  std::mutex mu;  // serializes the public calls
  std::unique_ptr<PServerSession> session;
  DensePath dense;
  RowsPath rows;
  ParamInit init;
  RuleControl rules;
};

PServerClient::PServerClient(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

PServerClient::~PServerClient() = default;

Result<std::unique_ptr<PServerClient>> PServerClient::Connect(
    const PServerClientOptions& options) {
  if (options.addresses.empty() && options.store_spec.empty())
    return Status::InvalidArgument("no pserver addresses and no store");
  if (options.addresses.size() > protocol::wire::kMaxPserverIndex) {
    return Status::InvalidArgument("too many pservers");
  }
  if (options.trainer_id < 0)
    return Status::InvalidArgument("trainer_id must be >= 0 (0: random)");
  FABPS_ASSIGN_OR_RETURN(auto session, PServerSession::Open(options));
  return std::unique_ptr<PServerClient>(
      new PServerClient(std::make_unique<Impl>(std::move(session))));
}

Result<bool> PServerClient::BeginInitParams(bool selected, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->init.Begin(selected, deadline);
}

Result<bool> PServerClient::BeginInitParams(bool selected) {
  return BeginInitParams(
      selected, Deadline::InMs(impl_->session->options().init_wait_ms));
}

Status PServerClient::InitParam(const ParamSpec& spec, const void* data,
                                size_t bytes) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->init.Add(spec, data, bytes);
}

Status PServerClient::InitTable(const ParamSpec& spec,
                                const TableConfig& config, const uint64_t* ids,
                                const void* values, uint64_t rows) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->init.AddTable(spec, config, ids, values, rows);
}

Status PServerClient::FinishInitParams() {
  return FinishInitParams(
      Deadline::InMs(impl_->session->options().init_wait_ms));
}

Status PServerClient::FinishInitParams(Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->init.Finish(deadline);
}

Result<std::shared_ptr<PushHandle>> PServerClient::SendGrads(
    const std::vector<ParamBuffer>& grads, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->session->Prepare(deadline));
  return impl_->dense.Push(grads, deadline);
}

Result<std::shared_ptr<PushHandle>> PServerClient::TrySendGrads(
    const std::vector<ParamBuffer>& grads, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  if (!impl_->session->StartsAtOnce(grads, /*push=*/true))
    return std::shared_ptr<PushHandle>();
  return impl_->dense.Push(grads, deadline);
}

Result<std::shared_ptr<PullHandle>> PServerClient::TryGetParamsAsync(
    const std::vector<ParamBuffer>& params, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  if (!impl_->session->StartsAtOnce(params, /*push=*/false))
    return std::shared_ptr<PullHandle>();
  return impl_->dense.Pull(params, deadline);
}

Result<std::shared_ptr<TransferHandle>> PServerClient::PushPull(
    const std::vector<ParamBuffer>& grads,
    const std::vector<ParamBuffer>& params, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->session->Prepare(deadline));
  return impl_->dense.PushPull(grads, params, deadline);
}

Result<std::shared_ptr<PushHandle>> PServerClient::SendGrads(
    const std::vector<ParamBuffer>& grads, uint64_t step, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->session->Prepare(deadline));
  return impl_->dense.PushStep(grads, step, deadline);
}

Result<uint64_t> PServerClient::SyncStep(Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->session->Prepare(deadline));
  return impl_->dense.SyncStep(deadline);
}

Result<std::shared_ptr<PullHandle>> PServerClient::GetParamsAsync(
    const std::vector<ParamBuffer>& params, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->session->Prepare(deadline));
  return impl_->dense.Pull(params, deadline);
}

Result<std::shared_ptr<PushHandle>> PServerClient::SendRows(
    const std::string& name, const int64_t* row_ids, size_t num_rows,
    const void* values, size_t bytes, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->session->Prepare(deadline));
  return impl_->rows.Send(name, row_ids, num_rows, values, bytes, std::nullopt,
                          deadline);
}

Result<std::shared_ptr<PushHandle>> PServerClient::SendRows(
    const std::string& name, const int64_t* row_ids, size_t num_rows,
    const void* values, size_t bytes, uint64_t step, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->session->Prepare(deadline));
  return impl_->rows.Send(name, row_ids, num_rows, values, bytes, step,
                          deadline);
}

Result<std::shared_ptr<PullHandle>> PServerClient::GetRows(
    const std::string& name, const int64_t* row_ids, size_t num_rows,
    void* values, size_t bytes, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->session->Prepare(deadline));
  return impl_->rows.Get(name, row_ids, num_rows, values, bytes, deadline);
}

Status PServerClient::Wait(const std::shared_ptr<TransferHandle>& handle,
                           Deadline deadline) {
  if (!handle) return Status::InvalidArgument("null transfer handle");
  std::lock_guard<std::mutex> l(impl_->mu);
  bool from_pserver = false;
  Status s = handle->Wait(deadline, &from_pserver);
  if (!from_pserver) return impl_->session->Note(s);
  // A pserver refused a block: only a reset connection needs a reconnect.
  if (s.code() == Status::Code::kUnavailable) impl_->session->MarkBroken();
  return s;
}

bool PServerClient::Finished(const std::shared_ptr<TransferHandle>& handle,
                             Deadline until) {
  return handle == nullptr || handle->Finished(until);
}

Status PServerClient::GetParams(const std::vector<ParamBuffer>& params,
                                Deadline deadline) {
  FABPS_ASSIGN_OR_RETURN(auto pull, GetParamsAsync(params, deadline));
  return Wait(pull, deadline);
}

Status PServerClient::SaveModel(const std::string& dir, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  const auto& addresses = impl_->session->options().addresses;
  for (size_t i = 0; i < addresses.size(); i++) {
    int64_t left = deadline.RemainingMs();
    if (left <= 0) {
      return Status::TimedOut(std::to_string(i) + " of " +
                              std::to_string(addresses.size()) +
                              " pservers saved by the deadline");
    }
    // A connection of its own whose socket timeouts are what is left of
    // the deadline: a save may take longer than rpc_timeout_ms.
    FABPS_ASSIGN_OR_RETURN(
        auto conn, PServerConnection::Open(
                       static_cast<uint32_t>(i), addresses[i],
                       static_cast<int>(std::min<int64_t>(left, INT32_MAX))));
    std::string path;
    FABPS_RETURN_IF_ERROR(conn->Call(
        "SaveModel", [&](ps::PServerClient& c) { c.SaveModel(path, dir); }));
  }
  return Status::OK();
}

Status PServerClient::SetLearningRates(
    const std::map<std::string, double>& rates, Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->session->Prepare(deadline));
  return impl_->rules.SetLearningRates(rates, deadline);
}

Result<std::map<std::string, UpdateRuleConfig>> PServerClient::Rules(
    Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->session->Prepare(deadline));
  return impl_->rules.Rules(deadline);
}

Result<const Layout*> PServerClient::layout(Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->session->Prepare(deadline));
  return &impl_->session->layout();
}

Result<std::vector<PServerClient::TableStats>> PServerClient::HashedTableStats(
    Deadline deadline) {
  std::lock_guard<std::mutex> l(impl_->mu);
  FABPS_RETURN_IF_ERROR(impl_->session->Prepare(deadline));
  std::vector<TableStats> out;
  for (auto& c : impl_->session->connections()) {
    rpc::pserver::PsStatus st;
    FABPS_RETURN_IF_ERROR(
        c->Call("GetStatus",
                [&](rpc::pserver::PServerClient& pc) { pc.GetStatus(st); }));
    for (const auto& t : st.tables)
      out.push_back(pserver::TableStatsFromThrift(t, c->index()));
  }
  return out;
}

std::string PServerClient::provider() const {
  return impl_->session->fabric().provider();
}

TrainerId PServerClient::trainer_id() const {
  return impl_->session->options().trainer_id;
}

void PServerClient::ForgetBuffer(const void* data, size_t bytes) {
  std::lock_guard<std::mutex> l(impl_->mu);
  impl_->session->fabric().cache().Invalidate(data, bytes);
}

PServerClient::RegistrationStats PServerClient::registration_stats() const {
  transport::RegistrationCache::Stats s =
      impl_->session->fabric().cache().stats();
  return RegistrationStats{s.hits, s.misses, s.entries, s.bytes};
}

}  // namespace fabps::trainer
