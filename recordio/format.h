// The recordio on-disk format: a file is a sequence of chunks, each a fixed
// 32-byte header followed by its payload. The payload holds records as
// (uint32 little-endian length, bytes) pairs, optionally compressed as a whole
// with zstd. All integers are little-endian.
//
//   offset size field
//   0      4    magic "FRIO"
//   4      1    version (1)
//   5      1    compression (0 none, 1 zstd)
//   6      2    reserved, 0
//   8      4    record count
//   12     4    stored payload size (after compression)
//   16     4    raw payload size (before compression)
//   20     4    CRC32C of the stored payload
//   24     4    reserved, 0
//   28     4    CRC32C of bytes 0..27
//
// The header CRC makes the sizes trustworthy before any allocation, so an
// index can be built by hopping from header to header without reading
// payloads; the payload CRC is checked when the chunk is read.
#ifndef FABPS_RECORDIO_FORMAT_H_
#define FABPS_RECORDIO_FORMAT_H_

#include <cstdint>
#include <string>

#include "base/status.h"

namespace fabps::recordio {

constexpr uint32_t kMagic = 0x4F495246;  // "FRIO" in file order
constexpr uint8_t kVersion = 1;
constexpr size_t kHeaderSize = 32;
// Bounds checked before allocating: a header claiming more is corrupt.
constexpr uint32_t kMaxPayloadBytes = 256u << 20;
constexpr uint32_t kMaxRawBytes = 256u << 20;
constexpr size_t kMaxRecordBytes = kMaxRawBytes - 4;

enum class Compression : uint8_t { kNone = 0, kZstd = 1 };

// Parses "none" or "zstd".
Result<Compression> ParseCompression(const std::string& name);
const char* CompressionName(Compression c);

struct ChunkHeader {
  Compression compression = Compression::kNone;
  uint32_t record_count = 0;
  uint32_t payload_size = 0;  // stored bytes following the header
  uint32_t raw_size = 0;      // bytes after decompression
  uint32_t payload_crc = 0;
};

// Writes exactly kHeaderSize bytes to `out`.
void EncodeHeader(const ChunkHeader& h, char* out);

// Validates magic, version, header CRC, compression and size bounds of the
// kHeaderSize bytes at `in`. Errors are Corruption naming the failed check;
// the caller adds file and offset.
Result<ChunkHeader> DecodeHeader(const char* in);

// One chunk of one file: what a task is made of and what a RangeScanner
// reads. `records` is the header's record count, kept for accounting.
struct ChunkRef {
  std::string path;
  uint64_t offset = 0;
  uint32_t records = 0;
};

}  // namespace fabps::recordio

#endif  // FABPS_RECORDIO_FORMAT_H_
