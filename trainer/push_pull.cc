// DensePath::PushPull: SendGrads and GetParamsAsync in one transfer. A
// block of a parameter in both lists is read once its push is applied (its
// credit is back), while later blocks are still being pushed or applied.
#include <unordered_map>
#include <utility>

#include "trainer/dense_path.h"

namespace fabps::trainer {
namespace {

// One block of a PushPull's `params`: everything its read needs, kept until
// the read is posted (after the walk, on the progress thread).
struct ReadAfterPush {
  transport::PeerId peer = 0;
  transport::RemoteRegion arena;
  uint64_t arena_offset = 0;
  std::shared_ptr<transport::MemoryRegion> region;
  size_t offset = 0;
  size_t bytes = 0;

  Result<transport::Completion> Start(transport::Endpoint* ep,
                                      Deadline deadline) const {
    return ep->Read(peer, *region, offset, bytes, arena, arena_offset,
                    deadline);
  }
};

// A credit part handed to a task on the progress thread: finished when the
// task runs, or with Unavailable when the endpoint closes first and drops
// the task unrun.
class PartOnProgressThread {
 public:
  explicit PartOnProgressThread(std::shared_ptr<TransferHandle> h)
      : h_(std::move(h)) {}
  ~PartOnProgressThread() {
    if (h_) {
      h_->PartDone(
          Status::Unavailable("endpoint closed before a pull could start"),
          /*from_pserver=*/false);
    }
  }
  PartOnProgressThread(const PartOnProgressThread&) = delete;
  PartOnProgressThread& operator=(const PartOnProgressThread&) = delete;
  TransferHandle& handle() { return *h_; }
  void Done(const Status& s) {
    h_->PartDone(s, /*from_pserver=*/false);
    h_.reset();
  }

 private:
  std::shared_ptr<TransferHandle> h_;
};

// What a block's credit starts in a PushPull: the read of its new values,
// posted from the progress thread that delivered the credit (a task queued
// there, not inside the completion dispatch, so that a busy provider can be
// driven while the post retries). A refused push is not read back; neither
// is anything of an abandoned transfer.
PushSlots::AfterCredit ReadAfterCredit(transport::Endpoint* ep,
                                       std::shared_ptr<TransferHandle> h,
                                       ReadAfterPush r, Deadline deadline) {
  return [ep, h = std::move(h), r = std::move(r),
          deadline](const Status& s) mutable {
    if (!s.ok()) {
      h->PartDone(s);
      return;
    }
    if (h->abandoned()) {
      h->PartDone(Status::Cancelled("transfer abandoned"),
                  /*from_pserver=*/false);
      return;
    }
    auto part = std::make_shared<PartOnProgressThread>(std::move(h));
    ep->RunOnProgressThread([ep, part, r = std::move(r), deadline] {
      if (part->handle().abandoned()) {
        part->Done(Status::Cancelled("transfer abandoned"));
        return;
      }
      auto c = r.Start(ep, deadline);
      if (c.ok()) part->handle().AddOperation(*c);
      part->Done(c.status());
    });
  };
}

}  // namespace

Result<std::shared_ptr<TransferHandle>> DensePath::PushPull(
    const std::vector<ParamBuffer>& grads,
    const std::vector<ParamBuffer>& params, Deadline deadline) {
  FABPS_RETURN_IF_ERROR(s_.CheckMode(false));
  auto handle = std::make_shared<TransferHandle>();
  std::unordered_map<uint32_t, ReadAfterPush> reads;
  FABPS_RETURN_IF_ERROR(s_.Note(WalkBlocks(
      s_.layout(), s_.fabric().cache(), params,
      [&](const BlockSpan& b) -> Status {
        FABPS_ASSIGN_OR_RETURN(uint64_t at,
                               s_.ArenaOffset(b.pserver, b.block, b.bytes));
        const PServerSession::Peer& p = s_.peer(b.pserver);
        reads[b.block] = ReadAfterPush{
            p.id, p.reg.arena, at, *b.region_owner, b.offset, b.bytes};
        return Status::OK();
      })));
  Status pushed = WalkBlocks(
      s_.layout(), s_.fabric().cache(), grads, [&](const BlockSpan& b) {
        PushSlots::AfterCredit then;
        auto r = reads.find(b.block);
        if (r != reads.end()) {
          then = ReadAfterCredit(s_.endpoint(), handle, std::move(r->second),
                                 deadline);
          reads.erase(r);
        }
        return PushBlock(b, handle, deadline, std::move(then));
      });
  if (!pushed.ok()) {
    // Blocks already pushed must not be read into buffers the caller gets
    // back with this error.
    handle->Abandon();
    return s_.Note(pushed);
  }
  // Parameters only pulled: read at once.
  for (auto& [block, r] : reads) {
    auto c = r.Start(s_.endpoint(), deadline);
    if (!c.ok()) {
      handle->Abandon();
      return s_.Note(c.status());
    }
    handle->AddOperation(*c);
  }
  return handle;
}

}  // namespace fabps::trainer
