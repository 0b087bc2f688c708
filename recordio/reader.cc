#include "recordio/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>

#include "base/crc32c.h"
#include "base/file_util.h"
#include "base/little_endian.h"

namespace fabps::recordio {

Result<std::unique_ptr<ChunkFile>> ChunkFile::Open(const std::string& path) {
  FABPS_ASSIGN_OR_RETURN(OpenedFile file, OpenRegularFile(path));
  return std::unique_ptr<ChunkFile>(new ChunkFile(path, file.fd, file.size));
}

ChunkFile::ChunkFile(std::string path, int fd, uint64_t size)
    : path_(std::move(path)), fd_(fd), size_(size) {}

ChunkFile::~ChunkFile() { ::close(fd_); }

Status ChunkFile::Error(uint64_t offset, const std::string& what) const {
  return Status::Corruption(path_ + " offset " + std::to_string(offset) + ": " +
                            what);
}

Status ChunkFile::PreadAll(uint64_t offset, char* out, size_t n) const {
  while (n > 0) {
    ssize_t r = ::pread(fd_, out, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return PosixError("read " + path_ + " offset " + std::to_string(offset),
                        errno);
    }
    if (r == 0) return Error(offset, "truncated (unexpected end of file)");
    out += r;
    offset += static_cast<uint64_t>(r);
    n -= static_cast<size_t>(r);
  }
  return Status::OK();
}

Result<ChunkHeader> ChunkFile::ReadHeader(uint64_t offset) const {
  if (offset > size_ || size_ - offset < kHeaderSize) {
    return Error(offset, "truncated header");
  }
  char buf[kHeaderSize];
  FABPS_RETURN_IF_ERROR(PreadAll(offset, buf, sizeof(buf)));
  Result<ChunkHeader> h = DecodeHeader(buf);
  if (!h.ok()) return Error(offset, h.status().message());
  if (size_ - offset - kHeaderSize < h->payload_size) {
    return Error(offset,
                 "truncated payload (header says " +
                     std::to_string(h->payload_size) + " bytes, file has " +
                     std::to_string(size_ - offset - kHeaderSize) + ")");
  }
  return h;
}

Result<Chunk> ChunkFile::ReadChunk(uint64_t offset) const {
  FABPS_ASSIGN_OR_RETURN(ChunkHeader h, ReadHeader(offset));
  std::string stored(h.payload_size, '\0');
  FABPS_RETURN_IF_ERROR(
      PreadAll(offset + kHeaderSize, stored.data(), stored.size()));
  if (crc32c::Value(stored.data(), stored.size()) != h.payload_crc) {
    return Error(offset, "payload CRC32C mismatch");
  }
  Chunk chunk;
  if (h.compression == Compression::kZstd) {
    unsigned long long content =
        ZSTD_getFrameContentSize(stored.data(), stored.size());
    if (content == ZSTD_CONTENTSIZE_ERROR ||
        content == ZSTD_CONTENTSIZE_UNKNOWN || content != h.raw_size) {
      return Error(offset, "zstd frame size does not match the header");
    }
    chunk.data_.resize(h.raw_size);
    size_t n = ZSTD_decompress(chunk.data_.data(), chunk.data_.size(),
                               stored.data(), stored.size());
    if (ZSTD_isError(n))
      return Error(offset, std::string("zstd: ") + ZSTD_getErrorName(n));
    if (n != h.raw_size)
      return Error(offset, "decompressed size does not match the header");
  } else {
    chunk.data_ = std::move(stored);
  }
  const std::string& d = chunk.data_;
  chunk.spans_.reserve(h.record_count);
  size_t pos = 0;
  while (pos < d.size()) {
    if (d.size() - pos < 4)
      return Error(offset, "record length prefix cut short");
    const uint32_t len = LoadU32(d.data() + pos);
    pos += 4;
    if (d.size() - pos < len)
      return Error(offset, "record runs past the chunk");
    if (chunk.spans_.size() == h.record_count) {
      return Error(offset, "more records than the header's count");
    }
    chunk.spans_.emplace_back(static_cast<uint32_t>(pos), len);
    pos += len;
  }
  if (chunk.spans_.size() != h.record_count) {
    return Error(offset, "fewer records than the header's count");
  }
  return chunk;
}

Status ChunkFile::ScanIndex(std::vector<ChunkInfo>* index) const {
  uint64_t offset = 0;
  while (offset < size_) {
    FABPS_ASSIGN_OR_RETURN(ChunkHeader h, ReadHeader(offset));
    index->push_back(ChunkInfo{offset, h});
    offset += kHeaderSize + h.payload_size;
  }
  return Status::OK();
}

Result<std::vector<ChunkRef>> IndexFile(const std::string& path) {
  FABPS_ASSIGN_OR_RETURN(auto file, ChunkFile::Open(path));
  std::vector<ChunkInfo> index;
  FABPS_RETURN_IF_ERROR(file->ScanIndex(&index));
  std::vector<ChunkRef> refs;
  refs.reserve(index.size());
  for (const ChunkInfo& c : index)
    refs.push_back(ChunkRef{path, c.offset, c.header.record_count});
  return refs;
}

}  // namespace fabps::recordio
