// DensePath: the dense data path of PServerClient over a PServerSession:
// pushes of whole parameters block by block into landing slots (async, or
// behind a step header in sync mode), pulls by RMA reads of the pservers'
// arenas, and PushPull, where each block's credit starts the read of its
// new values (see PServerClient for the contracts the caller sees).
//
// Every call expects Prepare to have succeeded on the session (the caller
// prepares once) and notes its own failures on it.
//
// Thread safety: none; PServerClient serializes.
#ifndef FABPS_TRAINER_DENSE_PATH_H_
#define FABPS_TRAINER_DENSE_PATH_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "trainer/block_walk.h"
#include "trainer/pserver_session.h"
#include "trainer/transfer_handle.h"

namespace fabps::trainer {

class DensePath {
 public:
  explicit DensePath(PServerSession* session) : s_(*session) {}

  // An async push of `grads` (the pservers run async mode).
  Result<std::shared_ptr<TransferHandle>> Push(
      const std::vector<ParamBuffer>& grads, Deadline deadline);
  // A sync push of `grads` for `step` (the pservers run sync mode).
  Result<std::shared_ptr<TransferHandle>> PushStep(
      const std::vector<ParamBuffer>& grads, uint64_t step, Deadline deadline);
  // The largest sync step any pserver has reached.
  Result<uint64_t> SyncStep(Deadline deadline);
  // Reads `params` from the pservers' arenas.
  Result<std::shared_ptr<TransferHandle>> Pull(
      const std::vector<ParamBuffer>& params, Deadline deadline);
  // Push of `grads` and pull of `params` in one transfer (push_pull.cc).
  Result<std::shared_ptr<TransferHandle>> PushPull(
      const std::vector<ParamBuffer>& grads,
      const std::vector<ParamBuffer>& params, Deadline deadline);

 private:
  // Runs `block` on every block of `buffers` into one new handle.
  template <class Fn>
  Result<std::shared_ptr<TransferHandle>> EachBlock(
      const std::vector<ParamBuffer>& buffers, Fn&& block);
  // Writes one block of a push into a free landing slot of its pserver;
  // `then` runs when its credit comes (PushSlots::AfterCredit).
  Status PushBlock(const BlockSpan& b,
                   const std::shared_ptr<TransferHandle>& push,
                   Deadline deadline, PushSlots::AfterCredit then = nullptr);
  // Sync mode: the block behind a step header, staged and written with one
  // RMA write (the push word has no room for a step).
  Status PushStepBlock(const BlockSpan& b, uint64_t step,
                       const std::shared_ptr<TransferHandle>& push,
                       Deadline deadline);
  Status PullBlock(const BlockSpan& b,
                   const std::shared_ptr<TransferHandle>& pull,
                   Deadline deadline);

  PServerSession& s_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_DENSE_PATH_H_
