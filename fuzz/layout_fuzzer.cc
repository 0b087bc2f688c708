// Fuzzes Layout::Decode, which reads layouts from peers (InitParams) and
// from checkpoint headers. Decode must return a Status for any bytes; when it
// accepts them, the format is canonical (Encode gives back the same bytes)
// and the layout's own invariants hold.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "protocol/layout.h"

namespace {

namespace protocol = fabps::protocol;

void Decode(const std::string& bytes) {
  auto layout = protocol::Layout::Decode(bytes.data(), bytes.size());
  if (!layout.ok()) return;
  FABPS_FUZZ_CHECK(layout->Encode() == bytes);
  FABPS_FUZZ_CHECK(protocol::Layout::DescribeDifference(*layout, *layout) ==
                   "");
  uint64_t blocks = 0;
  for (uint32_t p = 0; p < layout->params().size(); ++p) {
    FABPS_FUZZ_CHECK(layout->FindParam(layout->params()[p].name).value() == p);
    const protocol::BlockInfo& first =
        layout->blocks()[layout->FirstBlockOf(p)];
    FABPS_FUZZ_CHECK(first.param == p && first.index_in_param == 0);
  }
  // BlocksOf scans every block: only for small layouts.
  if (layout->num_pservers() <= 64 && layout->num_blocks() <= (1u << 16)) {
    for (uint32_t s = 0; s < layout->num_pservers(); ++s)
      blocks += layout->BlocksOf(s).size();
    FABPS_FUZZ_CHECK(blocks == layout->num_blocks());
  }
  for (const protocol::BlockInfo& b : layout->blocks()) {
    FABPS_FUZZ_CHECK(b.num_elements > 0 && b.pserver < layout->num_pservers());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  Decode(bytes);
  // With its CRC recomputed, unless it was right already: the same bytes
  // would cut the same blocks again (up to Layout::kMaxBlocks of them).
  std::string fixed = bytes;
  fabps::fuzz::FixLayoutCrc(&fixed);
  if (fixed != bytes) Decode(fixed);
  return 0;
}
