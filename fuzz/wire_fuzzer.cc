// Fuzzes the immediate-data decoders of pserver/wire.h. Every 64-bit value
// is either refused (push without its tag) or decodes to fields in range
// that encode back to the same value; and encoding any fields, then
// decoding, gives the fields back (masked to their widths).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz/fuzz_util.h"
#include "pserver/wire.h"

namespace {

namespace wire = fabps::pserver::wire;

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Each 8 bytes are one immediate value; each 13 bytes one set of fields.
  for (size_t i = 0; i + 8 <= size; i += 8) {
    uint64_t v;
    std::memcpy(&v, data + i, 8);
    CheckValue(v);
  }
  for (size_t i = 0; i + 13 <= size; i += 13) CheckFields(data + i);
  return 0;
}
