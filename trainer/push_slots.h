// PushSlots: the landing slots a trainer owns on each pserver and the
// credits that give them back.
//
// A push writes a block into one of this trainer's slots on the block's
// pserver; the pserver applies it and returns a credit (an immediate
// carrying pserver, slot, block and a status code, protocol/wire.h), which
// frees the slot and finishes that part of the push. Acquire blocks while
// every slot of the pserver is taken; a credit that names no slot in use is
// logged and dropped (a bad or late peer never frees someone else's slot).
//
// A rows read (PushKind::kRowsRead) gets its answer in the slot itself:
// such a slot is acquired with `hold`, and a good credit finishes its part
// of the transfer but keeps the slot taken until ReleaseHeld, after the
// trainer has read the rows out of it.
//
// A push may name what follows its credit (PServerClient::PushPull reads the
// block back): Acquire's `then` replaces the part's PartDone. It runs, on
// the thread that delivers the credit, with the credit's status once the
// slot is free again, and from then on it owns the part: it must see that
// PartDone is called on the push exactly once. A slot that fails without a
// credit (Release, FailAll) drops `then` and finishes the part itself.
//
// Thread safety: every method may be called from any thread; OnCredit runs
// on the fabric's progress thread.
#ifndef FABPS_TRAINER_PUSH_SLOTS_H_
#define FABPS_TRAINER_PUSH_SLOTS_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "trainer/transfer_handle.h"

namespace fabps::trainer {

class PushSlots {
 public:
  // What runs instead of PartDone when a slot's credit comes (see above).
  using AfterCredit = std::function<void(const Status&)>;

  // Sizes the table for `num_pservers`, every pserver without slots.
  explicit PushSlots(size_t num_pservers);

  // Gives pserver `pserver` `num_slots` free slots (after registering).
  void Reset(uint32_t pserver, uint32_t num_slots);
  // Takes a free slot of `pserver` for `block` of `push`, waiting until
  // `deadline` for one (TimedOut: the pserver's credits stopped). `then`
  // (not with `hold`) runs when the credit comes, in place of PartDone.
  Result<uint32_t> Acquire(uint32_t pserver, uint32_t block,
                           std::shared_ptr<TransferHandle> push,
                           Deadline deadline, bool hold = false,
                           AfterCredit then = nullptr);
  // Whether pserver i has at least need[i] free slots, for every i (a
  // snapshot: credits only add to it). False when `need` names more
  // pservers than the table has.
  bool HasFree(const std::vector<uint32_t>& need);
  // Gives a slot back whose write never started.
  void Release(uint32_t pserver, uint32_t slot);
  // True when `slot` of `pserver` was acquired with `hold` by `owner` and
  // its good credit came (its answer may be read). False after FailAll.
  bool Held(uint32_t pserver, uint32_t slot, const TransferHandle* owner);
  // Frees a slot Held by `owner`; does nothing when it is not.
  void ReleaseHeld(uint32_t pserver, uint32_t slot,
                   const TransferHandle* owner);
  // A credit immediate from a pserver.
  void OnCredit(uint64_t imm);
  // Drops every slot; each push still waiting for a credit gets `why`.
  void FailAll(const Status& why);

 private:
  struct Slot {
    std::shared_ptr<TransferHandle> push;  // null: free
    uint32_t block = 0;
    bool hold = false;      // a rows read: keep after a good credit
    bool credited = false;  // held, answer in the slot
    AfterCredit then;       // replaces push->PartDone on the credit
  };
  struct PServerSlots {
    std::vector<Slot> slots;
    std::vector<uint32_t> free;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<PServerSlots> pservers_;  // guarded by mu_
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_PUSH_SLOTS_H_
