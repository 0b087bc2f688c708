// Checkpoints of one shard: written while training goes on, verified
// completely before anything is loaded.
//
// Writing snapshots the shard block by block, each under its block's lock
// (applies of that block wait for one memcpy; nothing pauses globally), so
// blocks may come from slightly different moments: the usual async-SGD
// contract. Sync-mode partial sums are not saved; a loaded block restarts
// its current step empty.
//
// File "<dir>/shard-<index>-<sequence, 20 digits>.ckpt", written to
// "<dir>/.shard-<index>-<sequence>.ckpt.tmp", fsynced, renamed, directory
// fsynced. Format version 1, little-endian:
//   header  "FABPSCK1", u32 version, u32 shard index, u64 sequence,
//           u64 unix time (ms), u64 layout length, layout (Layout::Encode),
//           u32 block count, u32 CRC32C of the header bytes before it
//   blocks  in ascending id order, each: u32 id, u32 dtype, u32 rule kind,
//           u32 state slots, u64 elements, u64 update count, the values,
//           then each state array, u32 CRC32C of the record before it.
//           A hashed table's bucket: elements is rows * R for the rows it
//           holds, and u64 ids[rows], i64 update times (unix ms)[rows],
//           u64 tombstones, u64 evicted ids[tombstones] and i64 eviction
//           times[tombstones] come before the values (row i of each array
//           is id i's; each id is of the bucket and appears once, checked
//           on read)
//   footer  "FABPSEND", u32 block count, u64 file length, u32 CRC32C of the
//           footer bytes before it
// Every byte is covered by a CRC or checked against the layout, so a flipped
// byte or a truncation anywhere is detected.
//
// Thread safety: WriteCheckpoint and LoadCheckpoint may run concurrently
// with applies on the same shard. A CheckpointManager serializes its own
// calls; two managers must not share (dir, shard index).
#ifndef FABPS_PSERVER_CHECKPOINT_H_
#define FABPS_PSERVER_CHECKPOINT_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "pserver/shard.h"

namespace fabps::pserver {

struct CheckpointInfo {
  std::string path;
  uint32_t index = 0;  // the shard it holds (from its name)
  uint64_t sequence = 0;
  uint32_t header_crc = 0;  // identifies the file (recorded in the store)
  uint64_t bytes = 0;
  // CRC32C of the whole file (recorded in the store); the same for every
  // file of a layout (see RecordedCheckpoint): not an identity.
  uint32_t file_crc = 0;
};

// Writes a checkpoint of `shard` with `sequence` into `dir` (which must
// exist). On error no file with the final name is created.
Result<CheckpointInfo> WriteCheckpoint(const Shard& shard,
                                       const std::string& dir,
                                       uint64_t sequence);

// What a checkpoint file says about itself (its header).
struct CheckpointHeader {
  uint32_t shard_index = 0;
  uint64_t sequence = 0;
  uint64_t unix_ms = 0;  // when it was written
  Layout layout;         // of the job that wrote it
  // Its CRC32C: it covers the sequence and the write time, so it tells
  // one checkpoint file from every other (CheckpointInfo::header_crc).
  uint32_t crc = 0;
};
using CheckpointHeaderVisitor = std::function<Status(const CheckpointHeader&)>;
// A block record as read: `info` points into the header's layout; the value
// and state pointers are valid only during the call.
using CheckpointBlockVisitor = std::function<Status(const BlockView&)>;

// Reads the checkpoint at `path` once, without a shard: `on_header` (if
// set) sees the header once its CRC and layout have verified, before any
// block; `on_block` (if set) sees each block record, ascending id, once its
// CRC has verified. The footer is checked last, so a caller that must not
// act on a damaged file reads it twice (verify, then use) or discards what
// it gathered on error. A visitor's error stops the read and is returned.
// Errors name the file and the failed check (Corruption for damage).
Status ReadCheckpoint(const std::string& path,
                      const CheckpointHeaderVisitor& on_header,
                      const CheckpointBlockVisitor& on_block);

// Checks every CRC, length and field of the file at `path` against `shard`'s
// layout, index and rules, reading it once without changing the shard.
// Errors name the file and the failed check: Corruption for damaged or
// truncated files; FailedPrecondition for a healthy file that does not fit
// (another layout, shard index or update rule).
Status VerifyCheckpoint(const std::string& path, const Shard& shard);

// VerifyCheckpoint, then restores every block (values, optimizer state,
// update count). On error before the restore pass the shard is unchanged.
Status LoadCheckpoint(const std::string& path, Shard* shard);

// Checkpoints of shard `index` in `dir`, newest (highest sequence) first.
// Names that do not parse are ignored.
Result<std::vector<CheckpointInfo>> ListCheckpoints(const std::string& dir,
                                                    uint32_t index);

// Checkpoints of every shard in `dir`, by index ascending, then newest
// first. Names that do not parse are ignored.
Result<std::vector<CheckpointInfo>> ListAllCheckpoints(const std::string& dir);

// What the store recorded about the newest checkpoint
// (coord/protocol/checkpoint_record.h): before a file of that name is
// loaded its header CRC (which file it is: sequence and write time) and
// size must match, else it is skipped like a damaged one. The whole-file
// CRC cannot tell files apart: every header, record and footer ends with
// its own CRC32C, so a file's CRC depends only on the pieces' lengths.
struct RecordedCheckpoint {
  std::string file;  // base name; "" : nothing recorded
  uint32_t header_crc = 0;
  uint64_t bytes = 0;  // 0: not recorded (an older record)
};

// Save with rotation, load with fallback.
class CheckpointManager {
 public:
  // Keeps the newest `keep` (>= 1) checkpoints of shard `index` in `dir`.
  CheckpointManager(std::string dir, uint32_t index, uint32_t keep);

  // Writes the next sequence (newest on disk + 1), then removes older
  // files beyond `keep` and stale temporary files of this shard.
  Result<CheckpointInfo> Save(const Shard& shard);

  // Loads the newest checkpoint that verifies; each one that fails is
  // logged with its reason and the next older one is tried. NotFound when
  // there is none; otherwise the newest failure's code with every file's
  // reason in the message.
  // With `recorded` set, the file it names is first compared with it
  // (header CRC, size); a difference is logged as that file's reason and
  // the next older file is tried.
  Result<CheckpointInfo> LoadLatest(Shard* shard,
                                    const RecordedCheckpoint& recorded = {});

 private:
  std::mutex mu_;
  const std::string dir_;
  const uint32_t index_;
  const uint32_t keep_;
};

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_CHECKPOINT_H_
