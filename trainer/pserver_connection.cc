#include "trainer/pserver_connection.h"

#include <thread>

#include "protocol/wire.h"

namespace fabps::trainer {

namespace ps = rpc::pserver;

Status FromPsError(const ps::PsError& e) {
  switch (e.code) {
    case ps::PsErrorCode::INVALID_ARGUMENT:
      return Status::InvalidArgument(e.message);
    case ps::PsErrorCode::NOT_FOUND:
      return Status::NotFound(e.message);
    case ps::PsErrorCode::CORRUPTION:
      return Status::Corruption(e.message);
    case ps::PsErrorCode::FAILED_PRECONDITION:
      return Status::FailedPrecondition(e.message);
    case ps::PsErrorCode::UNAVAILABLE:
      return Status::Unavailable(e.message);
    case ps::PsErrorCode::RESOURCE_EXHAUSTED:
      return Status::ResourceExhausted(e.message);
    case ps::PsErrorCode::ALREADY_EXISTS:
      return Status::AlreadyExists(e.message);
    default:
      return Status::IOError(e.message);
  }
}

bool IsNotReady(const Status& s) {
  return s.code() == Status::Code::kFailedPrecondition ||
         s.code() == Status::Code::kUnavailable;
}

void PauseMs(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

Result<std::unique_ptr<PServerConnection>> PServerConnection::Open(
    uint32_t index, const std::string& address, int rpc_timeout_ms) {
  rpc::RpcClientOptions ro;
  FABPS_RETURN_IF_ERROR(rpc::ParseHostPort(address, &ro));
  ro.send_timeout_ms = rpc_timeout_ms;
  ro.recv_timeout_ms = rpc_timeout_ms;
  ro.max_frame_bytes = size_t{64} << 20;
  return std::unique_ptr<PServerConnection>(new PServerConnection(
      index, std::make_unique<rpc::RpcConnection<ps::PServerClient>>(ro)));
}

Result<PServerRegistration> PServerConnection::Register(
    const ps::TrainerHello& hello, Deadline deadline) {
  ps::Registration reg;
  FABPS_RETURN_IF_ERROR(RetryWhileNotReady(
      [&] {
        return Call("RegisterTrainer", deadline, [&](ps::PServerClient& c) {
          c.RegisterTrainer(reg, hello);
        });
      },
      deadline, 50));
  std::string me = "pserver " + std::to_string(index_);
  if (reg.num_slots < 1 ||
      reg.num_slots > static_cast<int32_t>(protocol::wire::kMaxSlots) ||
      reg.slot_bytes <= 0 || reg.trainer_index < 0 ||
      reg.trainer_index >
          static_cast<int32_t>(protocol::wire::kMaxTrainerIndex) ||
      reg.pserver_index != static_cast<int32_t>(index_) ||
      (reg.mode != 0 && reg.mode != 1) || reg.num_trainers < 0 ||
      reg.sync_step < 0) {
    return Status::Corruption(me + ": invalid registration");
  }
  PServerRegistration out;
  FABPS_ASSIGN_OR_RETURN(out.arena,
                         transport::RemoteRegion::Parse(reg.arena_region));
  FABPS_ASSIGN_OR_RETURN(out.landing,
                         transport::RemoteRegion::Parse(reg.landing_region));
  if (out.landing.length <
      static_cast<uint64_t>(reg.num_slots) * reg.slot_bytes) {
    return Status::Corruption(me + ": landing region smaller than its slots");
  }
  out.fabric_address = reg.fabric_address;
  out.trainer_index = static_cast<uint32_t>(reg.trainer_index);
  out.num_slots = static_cast<uint32_t>(reg.num_slots);
  out.slot_bytes = static_cast<uint64_t>(reg.slot_bytes);
  out.sync = reg.mode == 1;
  out.num_trainers = static_cast<uint32_t>(reg.num_trainers);
  out.sync_step = static_cast<uint64_t>(reg.sync_step);
  for (const auto& b : reg.blocks) {
    if (b.block < 0 || b.offset < 0 || b.bytes < 0 ||
        static_cast<uint64_t>(b.offset) + b.bytes > out.arena.length) {
      return Status::Corruption(me + ": block location out of range");
    }
    out.blocks[static_cast<uint32_t>(b.block)] = {b.offset, b.bytes};
  }
  return out;
}

}  // namespace fabps::trainer
