// Reading recordio files: one open file (ChunkFile), the records of one chunk
// (Chunk), and the chunk index of a file built from its headers.
//
// Every byte read is validated: header CRC and bounds before any allocation,
// payload CRC before decompression, the decompressed size against the header,
// and the record framing against the header's record count. Errors are
// Corruption with the message "<file> offset <n>: <failed check>"; a chunk
// that runs past the end of the file is reported as "truncated".
//
// Thread safety: a ChunkFile may be used by several threads at once (it only
// uses pread); a Chunk is a value.
#ifndef FABPS_RECORDIO_READER_H_
#define FABPS_RECORDIO_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "recordio/format.h"

namespace fabps::recordio {

// The decoded records of one chunk.
class Chunk {
 public:
  size_t size() const { return spans_.size(); }
  std::string_view record(size_t i) const {
    return std::string_view(data_.data() + spans_[i].first, spans_[i].second);
  }

 private:
  friend class ChunkFile;
  std::string data_;  // raw payload
  std::vector<std::pair<uint32_t, uint32_t>>
      spans_;  // (offset, length) in data_
};

struct ChunkInfo {
  uint64_t offset = 0;  // of the header
  ChunkHeader header;
};

class ChunkFile {
 public:
  // Opens `path` for reading. NotFound / IOError.
  static Result<std::unique_ptr<ChunkFile>> Open(const std::string& path);
  ~ChunkFile();
  ChunkFile(const ChunkFile&) = delete;
  ChunkFile& operator=(const ChunkFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

  // Reads and validates the header at `offset`, including that the payload
  // lies inside the file.
  Result<ChunkHeader> ReadHeader(uint64_t offset) const;
  // Reads, checks and decodes the chunk whose header is at `offset`.
  Result<Chunk> ReadChunk(uint64_t offset) const;

  // Hops from header to header from offset 0 and appends each chunk to
  // `index`. Stops at the first header that fails validation and returns its
  // error (the chunks before it stay in `index`); payloads are not checked.
  Status ScanIndex(std::vector<ChunkInfo>* index) const;

 private:
  ChunkFile(std::string path, int fd, uint64_t size);
  Status PreadAll(uint64_t offset, char* out, size_t n) const;
  Status Error(uint64_t offset, const std::string& what) const;

  std::string path_;
  int fd_;
  uint64_t size_;
};

// Convenience: the chunk index of `path` as ChunkRefs, failing on the first
// bad header.
Result<std::vector<ChunkRef>> IndexFile(const std::string& path);

}  // namespace fabps::recordio

#endif  // FABPS_RECORDIO_READER_H_
