#include "trainer/dense_path.h"

#include <algorithm>

#include "base/copy_bytes.h"
#include "protocol/slot_codec.h"

namespace fabps::trainer {

namespace ps = rpc::pserver;
namespace wire = protocol::wire;

template <class Fn>
Result<std::shared_ptr<TransferHandle>> DensePath::EachBlock(
    const std::vector<ParamBuffer>& buffers, Fn&& block) {
  auto handle = std::make_shared<TransferHandle>();
  FABPS_RETURN_IF_ERROR(s_.Note(
      WalkBlocks(s_.layout(), s_.fabric().cache(), buffers,
                 [&](const BlockSpan& b) { return block(b, handle); })));
  return handle;
}

Result<std::shared_ptr<TransferHandle>> DensePath::Push(
    const std::vector<ParamBuffer>& grads, Deadline deadline) {
  FABPS_RETURN_IF_ERROR(s_.CheckMode(false));
  return EachBlock(grads, [&](const BlockSpan& b, const auto& h) {
    return PushBlock(b, h, deadline);
  });
}

Result<std::shared_ptr<TransferHandle>> DensePath::PushStep(
    const std::vector<ParamBuffer>& grads, uint64_t step, Deadline deadline) {
  FABPS_RETURN_IF_ERROR(s_.CheckMode(true));
  return EachBlock(grads, [&](const BlockSpan& b, const auto& h) {
    return PushStepBlock(b, step, h, deadline);
  });
}

Result<std::shared_ptr<TransferHandle>> DensePath::Pull(
    const std::vector<ParamBuffer>& params, Deadline deadline) {
  return EachBlock(params, [&](const BlockSpan& b, const auto& h) {
    return PullBlock(b, h, deadline);
  });
}

Result<uint64_t> DensePath::SyncStep(Deadline deadline) {
  FABPS_RETURN_IF_ERROR(s_.CheckMode(true));
  uint64_t step = 0;
  for (auto& c : s_.connections()) {
    ps::PsStatus status;
    FABPS_RETURN_IF_ERROR(s_.Note(c->Call(
        "GetStatus", [&](ps::PServerClient& pc) { pc.GetStatus(status); })));
    if (status.sync_step < 0)
      return Status::Corruption("pserver reports a negative sync step");
    step = std::max(step, static_cast<uint64_t>(status.sync_step));
  }
  return step;
}

Status DensePath::PushBlock(const BlockSpan& b,
                            const std::shared_ptr<TransferHandle>& push,
                            Deadline deadline, PushSlots::AfterCredit then) {
  const PServerSession::Peer& p = s_.peer(b.pserver);
  if (b.bytes > p.reg.slot_bytes)
    return Status::Corruption("block larger than the pserver's slots");
  FABPS_ASSIGN_OR_RETURN(uint32_t slot,
                         s_.slots().Acquire(b.pserver, b.block, push, deadline,
                                            /*hold=*/false, std::move(then)));
  return s_.WriteIntoSlot(b.pserver, slot, *b.region, b.offset, b.bytes,
                          size_t{slot} * p.reg.slot_bytes,
                          {p.reg.trainer_index, slot, b.block}, push, deadline);
}

Status DensePath::PushStepBlock(const BlockSpan& b, uint64_t step,
                                const std::shared_ptr<TransferHandle>& push,
                                Deadline deadline) {
  const PServerSession::Peer& p = s_.peer(b.pserver);
  const size_t len = protocol::kStepHeaderBytes + b.bytes;
  if (len > p.reg.slot_bytes)
    return Status::Corruption("block larger than the pserver's slots");
  FABPS_ASSIGN_OR_RETURN(RowsStaging * st, s_.StagingOf(b.pserver));
  FABPS_ASSIGN_OR_RETURN(
      uint32_t slot, s_.slots().Acquire(b.pserver, b.block, push, deadline));
  const size_t off = size_t{slot} * p.reg.slot_bytes;
  char* at = st->data() + off;
  protocol::EncodeDenseStepHeader(at, b.block, step);
  CopyBytes(at + protocol::kStepHeaderBytes,
            static_cast<const char*>(b.region->data()) + b.offset, b.bytes);
  return s_.WriteIntoSlot(
      b.pserver, slot, st->region(), off, len, off,
      {p.reg.trainer_index, slot, b.block, wire::PushKind::kDenseStep}, push,
      deadline);
}

Status DensePath::PullBlock(const BlockSpan& b,
                            const std::shared_ptr<TransferHandle>& pull,
                            Deadline deadline) {
  FABPS_ASSIGN_OR_RETURN(uint64_t at,
                         s_.ArenaOffset(b.pserver, b.block, b.bytes));
  const PServerSession::Peer& p = s_.peer(b.pserver);
  auto c = s_.endpoint()->Read(p.id, *b.region, b.offset, b.bytes, p.reg.arena,
                               at, deadline);
  if (!c.ok()) return c.status();
  pull->AddOperation(*c);
  return Status::OK();
}

}  // namespace fabps::trainer
