#include "trainer/push_slots.h"

#include <string>

#include "base/log.h"
#include "protocol/wire.h"

namespace fabps::trainer {

PushSlots::PushSlots(size_t num_pservers) : pservers_(num_pservers) {}

void PushSlots::Reset(uint32_t pserver, uint32_t num_slots) {
  std::lock_guard<std::mutex> l(mu_);
  PServerSlots& p = pservers_.at(pserver);
  p.slots.assign(num_slots, Slot{});
  p.free.clear();
  for (uint32_t i = num_slots; i > 0; i--) p.free.push_back(i - 1);
}

Result<uint32_t> PushSlots::Acquire(uint32_t pserver, uint32_t block,
                                    std::shared_ptr<TransferHandle> push,
                                    Deadline deadline, bool hold,
                                    AfterCredit then) {
  std::unique_lock<std::mutex> l(mu_);
  PServerSlots& p = pservers_.at(pserver);
  if (!cv_.wait_until(l, deadline.time(), [&] { return !p.free.empty(); })) {
    return Status::TimedOut("no free landing slot on pserver " +
                            std::to_string(pserver) +
                            " (its credits stopped: dead or stuck?)");
  }
  uint32_t slot = p.free.back();
  p.free.pop_back();
  p.slots[slot] = {std::move(push), block, hold, false,
                   hold ? nullptr : std::move(then)};
  return slot;
}

bool PushSlots::HasFree(const std::vector<uint32_t>& need) {
  std::lock_guard<std::mutex> l(mu_);
  if (need.size() > pservers_.size()) return false;
  for (size_t i = 0; i < need.size(); i++) {
    if (pservers_[i].free.size() < need[i]) return false;
  }
  return true;
}

void PushSlots::Release(uint32_t pserver, uint32_t slot) {
  {
    std::lock_guard<std::mutex> l(mu_);
    PServerSlots& p = pservers_.at(pserver);
    p.slots.at(slot) = Slot{};
    p.free.push_back(slot);
  }
  cv_.notify_all();
}

bool PushSlots::Held(uint32_t pserver, uint32_t slot,
                     const TransferHandle* owner) {
  std::lock_guard<std::mutex> l(mu_);
  if (pserver >= pservers_.size() || slot >= pservers_[pserver].slots.size())
    return false;
  const Slot& s = pservers_[pserver].slots[slot];
  return s.credited && s.push.get() == owner;
}

void PushSlots::ReleaseHeld(uint32_t pserver, uint32_t slot,
                            const TransferHandle* owner) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (pserver >= pservers_.size() || slot >= pservers_[pserver].slots.size())
      return;
    Slot& s = pservers_[pserver].slots[slot];
    if (!s.credited || s.push.get() != owner) return;
    s = Slot{};
    pservers_[pserver].free.push_back(slot);
  }
  cv_.notify_all();
}

void PushSlots::OnCredit(uint64_t imm) {
  protocol::wire::CreditImm c = protocol::wire::DecodeCredit(imm);
  std::shared_ptr<TransferHandle> push;
  AfterCredit then;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (c.pserver >= pservers_.size() ||
        c.slot >= pservers_[c.pserver].slots.size()) {
      FABPS_LOG(WARNING) << "credit for unknown pserver " << c.pserver
                         << " slot " << c.slot;
      return;
    }
    Slot& slot = pservers_[c.pserver].slots[c.slot];
    if (!slot.push || slot.credited || slot.block != c.block) {
      FABPS_LOG(WARNING) << "unexpected credit from pserver " << c.pserver
                         << " slot " << c.slot << " block " << c.block;
      return;
    }
    if (slot.hold && c.code == Status::Code::kOk) {
      push = slot.push;  // the slot stays taken until ReleaseHeld
      slot.credited = true;
    } else {
      push = std::move(slot.push);
      then = std::move(slot.then);
      slot = Slot{};
      pservers_[c.pserver].free.push_back(c.slot);
    }
  }
  cv_.notify_all();
  Status s;
  if (c.code != Status::Code::kOk) {
    s = Status(c.code, "pserver " + std::to_string(c.pserver) +
                           " refused block " + std::to_string(c.block) +
                           " (see its log)");
  }
  if (then) {
    then(s);
  } else {
    push->PartDone(s);
  }
}

void PushSlots::FailAll(const Status& why) {
  std::vector<std::shared_ptr<TransferHandle>> orphans;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& p : pservers_) {
      for (auto& slot : p.slots) {
        // A held slot's part is done already.
        if (slot.push && !slot.credited)
          orphans.push_back(std::move(slot.push));
      }
      p.slots.clear();
      p.free.clear();
    }
  }
  cv_.notify_all();
  for (auto& p : orphans) p->PartDone(why);
}

}  // namespace fabps::trainer
