// Fuzzes the immediate-data decoders of protocol/wire.h and the landing-slot
// parsers of protocol/slot_codec.h. Every 64-bit value is either refused
// (push without its tag) or decodes to fields in range that encode back to
// the same value; encoding any fields, then decoding, gives the fields back
// (masked to their widths). The whole input as a slot of each rows kind and
// of a sync dense block is either refused or parses to a header whose rows
// fit the slot and that the encoder writes back byte for byte.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "protocol/slot_codec.h"
#include "protocol/wire.h"

namespace {

namespace wire = fabps::protocol::wire;

void CheckValue(uint64_t v) {
  auto push = wire::DecodePush(v);
  // 0xA5 dense, 0xA6 rows, 0xA7 rows read, 0xA8 a sync step's dense block,
  // 0xA9 a sync step's rows
  const uint64_t tag = v >> 56;
  FABPS_FUZZ_CHECK(push.ok() == (tag >= 0xA5 && tag <= 0xA9));
  if (push.ok()) {
    FABPS_FUZZ_CHECK(push->trainer <= wire::kMaxTrainerIndex);
    FABPS_FUZZ_CHECK(push->slot < wire::kMaxSlots);
    FABPS_FUZZ_CHECK(wire::EncodePush(*push) == v);
  }
  wire::CreditImm credit = wire::DecodeCredit(v);
  FABPS_FUZZ_CHECK(credit.pserver <= wire::kMaxPserverIndex);
  FABPS_FUZZ_CHECK(credit.slot < wire::kMaxSlots);
  FABPS_FUZZ_CHECK(wire::EncodeCredit(credit) == v);
}

void CheckFields(const uint8_t* d) {
  uint32_t a, b, c;
  std::memcpy(&a, d, 4);
  std::memcpy(&b, d + 4, 4);
  std::memcpy(&c, d + 8, 4);
  wire::PushImm p{a, b, c};
  auto back = wire::DecodePush(wire::EncodePush(p));
  FABPS_FUZZ_CHECK(back.ok());
  FABPS_FUZZ_CHECK(back->trainer == (a & 0xFFFF) && back->slot == (b & 0xFF) &&
                   back->block == c && back->kind == wire::PushKind::kDense);
  for (wire::PushKind k :
       {wire::PushKind::kRows, wire::PushKind::kRowsRead,
        wire::PushKind::kDenseStep, wire::PushKind::kRowsStep}) {
    auto rows = wire::DecodePush(wire::EncodePush({a, b, c, k}));
    FABPS_FUZZ_CHECK(rows.ok() && rows->kind == k && rows->block == c);
  }
  wire::CreditImm cr{a, b, static_cast<fabps::Status::Code>(d[12]), c};
  wire::CreditImm cb = wire::DecodeCredit(wire::EncodeCredit(cr));
  FABPS_FUZZ_CHECK(cb.pserver == (a & 0xFFFF) && cb.slot == (b & 0xFF) &&
                   static_cast<int>(cb.code) == d[12] && cb.block == c);
}

// Block 1 of a [10, 4] float32 table cut 4 rows a block: rows 4..7.
const fabps::protocol::BlockInfo& TestBlock() {
  static const fabps::protocol::BlockInfo block = [] {
    auto l = fabps::protocol::Layout::Build(
        {{"emb", fabps::protocol::DType::kFloat32, {10, 4}}}, 16, 1);
    return l->blocks()[1];
  }();
  return block;
}

void CheckSlot(const uint8_t* data, size_t size) {
  namespace protocol = fabps::protocol;
  const protocol::BlockInfo& block = TestBlock();
  // 8-byte aligned like a landing slot.
  std::vector<uint64_t> slot(size / 8 + 1);
  std::memcpy(slot.data(), data, size);
  std::vector<uint64_t> again(slot.size() + 8);
  for (wire::PushKind kind : {wire::PushKind::kRows, wire::PushKind::kRowsRead,
                              wire::PushKind::kRowsStep}) {
    auto r = protocol::ParseRowsSlot(slot.data(), size, kind, block, 4);
    if (!r.ok()) continue;
    FABPS_FUZZ_CHECK(r->count > 0 || kind == wire::PushKind::kRowsStep);
    FABPS_FUZZ_CHECK(r->values_offset + r->count * 16 <= size);
    FABPS_FUZZ_CHECK(r->values_offset ==
                     protocol::RowsValuesOffset(kind, r->count));
    const char* at = reinterpret_cast<const char*>(slot.data());
    const size_t n = protocol::EncodeRowsSlot(
        again.data(), kind, block.id, r->step,
        reinterpret_cast<const uint64_t*>(at + r->ids_offset), r->count);
    FABPS_FUZZ_CHECK(n == r->values_offset);
    FABPS_FUZZ_CHECK(std::memcmp(again.data(), at, n) == 0);
  }
  auto step = protocol::ParseDenseStepHeader(slot.data(), size, block.id);
  if (step.ok()) {
    protocol::EncodeDenseStepHeader(again.data(), block.id, *step);
    FABPS_FUZZ_CHECK(std::memcmp(again.data(), slot.data(),
                                 protocol::kStepHeaderBytes) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Each 8 bytes are one immediate value; each 13 bytes one set of fields.
  for (size_t i = 0; i + 8 <= size; i += 8) {
    uint64_t v;
    std::memcpy(&v, data + i, 8);
    CheckValue(v);
  }
  for (size_t i = 0; i + 13 <= size; i += 13) CheckFields(data + i);
  CheckSlot(data, size);
  return 0;
}
