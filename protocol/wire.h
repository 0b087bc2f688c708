// The 64-bit immediate data of the pserver data plane.
//
// Push (trainer -> pserver), carried by the RMA write that put a gradient
// block (or a rows request) into one of the trainer's landing slots:
//   bits 63..56  tag, which also says what the slot holds (PushKind):
//                0xA5 a dense gradient block, 0xA6 sparse rows of the block
//                (a RowsHeader, row ids and row gradients), 0xA7 a rows
//                read (a RowsHeader and row ids; the pserver writes the rows
//                behind the ids), 0xA8 a dense gradient block of a sync
//                step (a StepHeader, then the block), 0xA9 sparse rows of
//                a sync step (a StepHeader, then the sparse rows, possibly
//                none). Any other value catches stray or corrupted words.
//   bits 55..40  trainer index (from the pserver's Registration)
//   bits 39..32  slot index in the trainer's landing region
//   bits 31..0   global block id
// Credit (pserver -> trainer), carried by a zero-byte RMA write to the
// trainer's credit region once the slot may be reused:
//   bits 63..48  pserver index
//   bits 47..40  slot index
//   bits 39..32  Status::Code of the apply (0: applied)
//   bits 31..0   global block id
// What a landing slot holds for each kind (headers, ids, rows) is
// protocol/slot_codec.h's.
// Everything decoded here comes from a peer: Decode* check the tag and the
// ranges they can, callers check the rest against their own tables.
#ifndef FABPS_PROTOCOL_WIRE_H_
#define FABPS_PROTOCOL_WIRE_H_

#include <cstdint>

#include "base/status.h"

namespace fabps::protocol::wire {

constexpr uint32_t kMaxTrainerIndex = 0xFFFF;
constexpr uint32_t kMaxSlots = 256;
constexpr uint32_t kMaxPserverIndex = 0xFFFF;

enum class PushKind : uint32_t {
  kDense = 0xA5,
  kRows = 0xA6,
  kRowsRead = 0xA7,
  kDenseStep = 0xA8,
  kRowsStep = 0xA9,
};
constexpr uint64_t kFirstPushTag = 0xA5;
constexpr uint64_t kLastPushTag = 0xA9;

struct PushImm {
  uint32_t trainer = 0;
  uint32_t slot = 0;
  uint32_t block = 0;
  PushKind kind = PushKind::kDense;
};

struct CreditImm {
  uint32_t pserver = 0;
  uint32_t slot = 0;
  Status::Code code = Status::Code::kOk;
  uint32_t block = 0;
};

inline uint64_t EncodePush(const PushImm& p) {
  return (uint64_t{static_cast<uint32_t>(p.kind) & 0xFF} << 56) |
         (uint64_t{p.trainer & 0xFFFF} << 40) |
         (uint64_t{p.slot & 0xFF} << 32) | p.block;
}

inline Result<PushImm> DecodePush(uint64_t v) {
  const uint64_t tag = v >> 56;
  if (tag < kFirstPushTag || tag > kLastPushTag)
    return Status::Corruption("push immediate data without a 0xA5..0xA9 tag");
  PushImm p;
  p.kind = static_cast<PushKind>(tag);
  p.trainer = static_cast<uint32_t>((v >> 40) & 0xFFFF);
  p.slot = static_cast<uint32_t>((v >> 32) & 0xFF);
  p.block = static_cast<uint32_t>(v & 0xFFFFFFFFu);
  return p;
}

inline uint64_t EncodeCredit(const CreditImm& c) {
  return (uint64_t{c.pserver & 0xFFFF} << 48) |
         (uint64_t{c.slot & 0xFF} << 40) |
         (uint64_t{static_cast<uint32_t>(c.code) & 0xFF} << 32) | c.block;
}

inline CreditImm DecodeCredit(uint64_t v) {
  CreditImm c;
  c.pserver = static_cast<uint32_t>(v >> 48);
  c.slot = static_cast<uint32_t>((v >> 40) & 0xFF);
  c.code = static_cast<Status::Code>((v >> 32) & 0xFF);
  c.block = static_cast<uint32_t>(v & 0xFFFFFFFFu);
  return c;
}

}  // namespace fabps::protocol::wire

#endif  // FABPS_PROTOCOL_WIRE_H_
