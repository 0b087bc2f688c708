#include "trainer/master_rpc.h"

#include "base/log.h"
#include "coord/protocol/discovery.h"
#include "coord/store.h"

namespace fabps::trainer {
namespace {

namespace gen = ::fabps::rpc::master;

Status FromMasterError(const gen::MasterError& e, const std::string& what) {
  std::string msg = what + ": master: " + e.message;
  switch (e.code) {
    case gen::ErrorCode::INVALID_ARGUMENT:
      return Status::InvalidArgument(msg);
    case gen::ErrorCode::NOT_FOUND:
      return Status::NotFound(msg);
    case gen::ErrorCode::CORRUPTION:
      return Status::Corruption(msg);
    case gen::ErrorCode::FAILED_PRECONDITION:
      return Status::FailedPrecondition(msg);
    case gen::ErrorCode::UNAVAILABLE:
      return Status::Unavailable(msg);
    default:
      return Status::IOError(msg);
  }
}

}  // namespace

MasterRpc::MasterRpc(std::string address, std::unique_ptr<coord::Store> store,
                     int rpc_timeout_ms, int64_t retry_ms,
                     const std::atomic<bool>* cancel)
    : address_(std::move(address)),
      store_(std::move(store)),
      rpc_timeout_ms_(rpc_timeout_ms),
      retry_ms_(retry_ms),
      cancel_(cancel) {}

MasterRpc::~MasterRpc() = default;

Status MasterRpc::ConnectLocked() {
  std::string addr = address_;
  if (addr.empty()) {
    if (store_ == nullptr)
      return Status::InvalidArgument("no master address and no store");
    // Unavailable while no master leads: Invoke retries it.
    FABPS_ASSIGN_OR_RETURN(
        addr, coord::LookupMaster(store_.get(), store_->DefaultDeadline()));
  }
  rpc::RpcClientOptions o;
  FABPS_RETURN_IF_ERROR(rpc::ParseHostPort(addr, &o));
  o.connect_timeout_ms = rpc_timeout_ms_;
  o.send_timeout_ms = rpc_timeout_ms_;
  o.recv_timeout_ms = rpc_timeout_ms_;
  conn_ = std::make_unique<rpc::RpcConnection<gen::MasterClient>>(o);
  return Status::OK();
}

Status MasterRpc::Invoke(const std::string& what,
                         const std::function<void(gen::MasterClient&)>& fn) {
  rpc::RetryOptions retry;
  retry.max_attempts = 1 << 20;  // bounded by the deadline
  retry.initial_backoff_ms = 20;
  retry.max_backoff_ms = 500;
  retry.deadline = Deadline::InMs(retry_ms_);
  return rpc::RetryWithBackoff(retry, [&]() -> Status {
    if (cancel_ != nullptr && cancel_->load())
      return Status::Cancelled(what + ": cancelled");
    std::lock_guard<std::mutex> l(mu_);
    if (conn_ == nullptr) FABPS_RETURN_IF_ERROR(ConnectLocked());
    Status app;
    Status s = conn_->Call(what, [&](gen::MasterClient& c) {
      try {
        fn(c);
      } catch (const gen::MasterError& e) {
        app = FromMasterError(e, what);
      }
    });
    if (s.ok()) s = app;
    if (!s.ok() && rpc::IsRetryable(s)) {
      conn_.reset();  // reconnect (and look the address up again) next time
      FABPS_LOG(DEBUG) << "retrying: " << s.ToString();
    }
    return s;
  });
}

Status MasterRpc::SetDataset(const std::vector<std::string>& globs) {
  return Invoke("SetDataset",
                [&](gen::MasterClient& c) { c.SetDataset(globs); });
}

Result<gen::GetTaskReply> MasterRpc::GetTask(int64_t pass,
                                             const std::string& trainer_id) {
  gen::GetTaskReply reply;
  FABPS_RETURN_IF_ERROR(Invoke("GetTask", [&](gen::MasterClient& c) {
    c.GetTask(reply, pass, trainer_id);
  }));
  return reply;
}

Result<bool> MasterRpc::TaskFinished(int64_t id, int64_t epoch) {
  bool ok = false;
  FABPS_RETURN_IF_ERROR(Invoke("TaskFinished", [&](gen::MasterClient& c) {
    ok = c.TaskFinished(id, epoch);
  }));
  return ok;
}

Result<bool> MasterRpc::TaskFailed(int64_t id, int64_t epoch) {
  bool ok = false;
  FABPS_RETURN_IF_ERROR(Invoke("TaskFailed", [&](gen::MasterClient& c) {
    ok = c.TaskFailed(id, epoch);
  }));
  return ok;
}

Result<bool> MasterRpc::RequestSaveModel(const std::string& trainer_id,
                                         int64_t block_ms) {
  bool ok = false;
  FABPS_RETURN_IF_ERROR(Invoke("RequestSaveModel", [&](gen::MasterClient& c) {
    ok = c.RequestSaveModel(trainer_id, block_ms);
  }));
  return ok;
}

Result<gen::MasterStatus> MasterRpc::GetStatus() {
  gen::MasterStatus st;
  FABPS_RETURN_IF_ERROR(
      Invoke("Status", [&](gen::MasterClient& c) { c.Status(st); }));
  return st;
}

}  // namespace fabps::trainer
