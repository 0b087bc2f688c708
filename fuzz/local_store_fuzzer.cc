// Fuzzes the local store's files (coord/local/record.h): its log, read back
// record by record into the state machine when a store opens, and its
// snapshot. The first byte picks the input: even, a log (framing as
// LocalStore reads it: u32 length, u32 CRC32C, payload); odd, a snapshot.
// Every bad byte must come back as a Status; what decodes must encode to
// bytes that decode to the same encoding, and each record is applied to the
// state (State::Apply refuses records that do not fit it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/crc32c.h"
#include "coord/local/record.h"
#include "coord/local/state.h"
#include "fuzz/fuzz_util.h"

namespace {

namespace local = fabps::coord::local;

void Log(const std::string& bytes) {
  local::State state;
  size_t at = 0;
  while (bytes.size() - at >= local::kRecordHeaderBytes) {
    uint32_t len = fabps::fuzz::Load32(bytes, at);
    uint32_t crc = fabps::fuzz::Load32(bytes, at + 4);
    if (len == 0 || len > local::kMaxRecordBytes ||
        len > bytes.size() - at - local::kRecordHeaderBytes)
      return;
    const char* payload = bytes.data() + at + local::kRecordHeaderBytes;
    if (fabps::crc32c::Value(payload, len) != crc) return;
    local::Record r;
    if (!local::DecodeRecordPayload(payload, len, &r).ok()) return;
    std::string again;
    local::EncodeRecord(r, &again);
    local::Record r2;
    FABPS_FUZZ_CHECK(again.size() >= local::kRecordHeaderBytes);
    FABPS_FUZZ_CHECK(local::DecodeRecordPayload(
                         again.data() + local::kRecordHeaderBytes,
                         again.size() - local::kRecordHeaderBytes, &r2)
                         .ok());
    std::string third;
    local::EncodeRecord(r2, &third);
    FABPS_FUZZ_CHECK(third == again);
    std::vector<fabps::coord::WatchEvent> events;
    if (!state.Apply(r, &events).ok()) return;
    at += local::kRecordHeaderBytes + len;
  }
  // A state the log built survives its own snapshot.
  std::string snap = state.EncodeSnapshot(1);
  local::State back;
  uint64_t gen = 0;
  FABPS_FUZZ_CHECK(back.DecodeSnapshot(snap, &gen).ok() && gen == 1);
  FABPS_FUZZ_CHECK(back.EncodeSnapshot(1) == snap);
}

void Snapshot(const std::string& bytes) {
  local::State state;
  uint64_t gen = 0;
  if (!state.DecodeSnapshot(bytes, &gen).ok()) return;
  std::string again = state.EncodeSnapshot(gen);
  local::State back;
  uint64_t gen2 = 0;
  FABPS_FUZZ_CHECK(back.DecodeSnapshot(again, &gen2).ok() && gen2 == gen);
  FABPS_FUZZ_CHECK(back.EncodeSnapshot(gen2) == again);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  bool snapshot = data[0] & 1;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (snapshot) {
    Snapshot(bytes);
    std::string fixed = bytes;
    fabps::fuzz::FixLocalSnapshotCrc(&fixed);
    if (fixed != bytes) Snapshot(fixed);
  } else {
    Log(bytes);
    std::string fixed = bytes;
    fabps::fuzz::FixLocalLogCrcs(&fixed);
    if (fixed != bytes) Log(fixed);
  }
  return 0;
}
