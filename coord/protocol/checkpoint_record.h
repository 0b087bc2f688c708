// The checkpoint record of a pserver index: ps/<i>/checkpoint says where
// and when the owner of index i last checkpointed, so that a replacement
// started on another host (or with another --checkpoint-dir) recovers from
// the same files when it can reach them. Written by the claim's owner
// (PserverClaim::RecordCheckpoint, fenced by the claim, no lease: it must
// outlive the owner); read by whoever claims the index next.
//
// Value, text lines "name=value\n" in this order:
//   dir=<absolute directory of the index's checkpoints>   (required)
//   file=<newest checkpoint file in it>                   (optional)
//   crc=<its header CRC32C, 8 hex digits>                 (with file)
//   size=<its length in bytes, decimal>                   (with file)
//   filecrc=<CRC32C of the whole file, 8 hex digits>      (with file)
//   time=<unix seconds when recorded>                     (required)
// Older records parse too: without size= and filecrc= (4 lines; size and
// file_crc 0: nothing to compare) and without file= and crc= (2 lines).
// A recovering pserver compares the recorded file's header CRC (which
// file it is) and size before loading it (pserver/checkpoint.h,
// RecordedCheckpoint); filecrc tells no two files of a layout apart.
//
// Thread safety: pure functions, and ReadCheckpointRecord is safe wherever
// Store calls are.
#ifndef FABPS_COORD_PROTOCOL_CHECKPOINT_RECORD_H_
#define FABPS_COORD_PROTOCOL_CHECKPOINT_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/store.h"

namespace fabps::coord {

struct CheckpointRecord {
  std::string dir;        // non-empty, no newline
  std::string file;       // "" when not known; no newline
  uint32_t crc = 0;       // header CRC of `file`; 0 when `file` is ""
  int64_t unix_time = 0;  // >= 0
  uint64_t size = 0;      // bytes of `file`; 0: not recorded (older record)
  uint32_t file_crc = 0;  // CRC32C of all of `file` (with size)

  bool operator==(const CheckpointRecord& o) const {
    return dir == o.dir && file == o.file && crc == o.crc &&
           unix_time == o.unix_time && size == o.size && file_crc == o.file_crc;
  }
};

// InvalidArgument when `record` breaks the rules above.
Result<std::string> EncodeCheckpointRecord(const CheckpointRecord& record);

// Corruption naming the offending line when `value` is not a record as
// EncodeCheckpointRecord writes it (or an older one, see above).
Result<CheckpointRecord> ParseCheckpointRecord(std::string_view value);

// The record of index `index`; NotFound when none was ever recorded,
// Corruption (with the key) when it does not parse, the store's errors.
Result<CheckpointRecord> ReadCheckpointRecord(Store* store, uint32_t index,
                                              Deadline deadline);

}  // namespace fabps::coord

#endif  // FABPS_COORD_PROTOCOL_CHECKPOINT_RECORD_H_
