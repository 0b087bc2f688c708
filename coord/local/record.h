// The on-disk records of the local store (internal to coord/local/).
//
// Log file "log.<gen>": a sequence of records, each
//   u32 payload length | u32 CRC32C of the payload | payload
// (little-endian). The payload starts with a type byte; see Record. Integers
// are fixed-width little-endian, strings a u32 length then the bytes.
//
// Snapshot file "SNAPSHOT": "FABPSCS1" | u32 body length | u32 CRC32C of the
// body | body, where the body is the whole state (State::EncodeSnapshot).
//
// Every length read is bounded by the bytes that remain, and every record
// and snapshot is checksummed; decoding reports kCorruption with the file
// offset, never crashes on bad input.
#ifndef FABPS_COORD_LOCAL_RECORD_H_
#define FABPS_COORD_LOCAL_RECORD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace fabps::coord::local {

constexpr uint32_t kMaxRecordBytes = 16u << 20;
constexpr size_t kRecordHeaderBytes = 8;
constexpr char kSnapshotMagic[8] = {'F', 'A', 'B', 'P', 'S', 'C', 'S', '1'};
constexpr uint64_t kMaxSnapshotBytes = uint64_t{1} << 31;

// One change to the key space inside a kWrite record.
struct Mutation {
  bool is_put = true;
  std::string key;  // absolute ("/<job>/...")
  std::string value;
  int64_t lease = 0;
};

struct Record {
  enum class Type : uint8_t {
    kWrite = 1,        // revision, mutations
    kLeaseGrant = 2,   // lease, ttl_seconds, expiry_ms
    kLeaseRenew = 3,   // lease, expiry_ms
    kLeaseRemove = 4,  // lease, revision (its keys are deleted at it)
  };
  Type type = Type::kWrite;
  int64_t revision = 0;
  std::vector<Mutation> mutations;
  int64_t lease = 0;
  int64_t ttl_seconds = 0;
  int64_t expiry_ms = 0;  // wall clock, ms since the epoch
};

// Appends header + payload of `r` to `*out`.
void EncodeRecord(const Record& r, std::string* out);

// Decodes one payload (without the header); kCorruption on bad bytes.
Status DecodeRecordPayload(const char* data, size_t n, Record* r);

}  // namespace fabps::coord::local

#endif  // FABPS_COORD_LOCAL_RECORD_H_
