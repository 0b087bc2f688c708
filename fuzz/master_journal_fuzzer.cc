// Fuzzes the master's journal records and snapshots (master/change.h,
// master/task_queues.h), which a new master reads back from the store and
// replays. An input is what a master loads: pieces, each a u16 length
// (little-endian; the last piece may be cut short) and its bytes. The first
// piece is a snapshot (DecodeSnapshot; an empty state when it does not
// decode), every later one a journal record (DecodeChange) applied to that
// state as replay does (TaskQueues::Apply validates it). Every bad byte must
// come back as a Status; what decodes must encode to bytes that decode to
// the same encoding, and the replayed state must survive its own snapshot.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "master/change.h"
#include "master/task_queues.h"

namespace {

namespace master = fabps::master;

// As it is, then with its trailing CRC32C recomputed (so that mutations
// reach the fields behind the checksum).
template <typename F>
auto DecodeEitherWay(const std::string& bytes, F decode) {
  auto r = decode(bytes);
  if (r.ok()) return r;
  std::string fixed = bytes;
  fabps::fuzz::FixTrailingCrc(&fixed);
  return decode(fixed);
}

void CheckSnapshot(const master::TaskQueues& q) {
  std::string bytes = q.EncodeSnapshot();
  auto back = master::TaskQueues::DecodeSnapshot(bytes);
  FABPS_FUZZ_CHECK(back.ok());
  FABPS_FUZZ_CHECK(back->EncodeSnapshot() == bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> pieces = fabps::fuzz::SplitPieces(data, size);
  if (pieces.empty()) return 0;
  master::TaskQueues queues;
  auto snapshot = DecodeEitherWay(pieces[0], [](const std::string& b) {
    return master::TaskQueues::DecodeSnapshot(b);
  });
  if (snapshot.ok()) {
    queues = std::move(snapshot).value();
    CheckSnapshot(queues);
  }
  for (size_t i = 1; i < pieces.size(); ++i) {
    auto c = DecodeEitherWay(pieces[i], [](const std::string& b) {
      return master::DecodeChange(b);
    });
    if (!c.ok()) continue;
    std::string again = master::EncodeChange(*c);
    auto c2 = master::DecodeChange(again);
    FABPS_FUZZ_CHECK(c2.ok());
    FABPS_FUZZ_CHECK(master::EncodeChange(*c2) == again);
    (void)queues.Apply(*c);
  }
  CheckSnapshot(queues);
  return 0;
}
