#include "recordio/writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>

#include "base/crc32c.h"
#include "base/little_endian.h"

namespace fabps::recordio {

Result<std::unique_ptr<Writer>> Writer::Create(const std::string& path,
                                               const WriterOptions& options) {
  if (options.max_chunk_bytes < 1 || options.max_chunk_bytes >= kMaxRawBytes) {
    return Status::InvalidArgument("max_chunk_bytes must be in [1, 256 MiB)");
  }
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return PosixError("create " + tmp, errno);
  return std::unique_ptr<Writer>(new Writer(path, fd, options));
}

Writer::Writer(std::string path, int fd, const WriterOptions& options)
    : path_(std::move(path)), fd_(fd), options_(options) {}

Writer::~Writer() {
  if (!closed_) {
    ::close(fd_);
    ::unlink((path_ + ".tmp").c_str());
  }
}

Status Writer::WriteAll(const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return PosixError("write " + path_ + ".tmp", errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Status Writer::Append(std::string_view record) {
  if (closed_) return Status::FailedPrecondition("recordio writer is closed");
  if (record.size() > kMaxRecordBytes) {
    return Status::InvalidArgument("record of " +
                                   std::to_string(record.size()) +
                                   " bytes exceeds the recordio limit");
  }
  if (!raw_.empty() && raw_.size() + 4 + record.size() > kMaxRawBytes) {
    FABPS_RETURN_IF_ERROR(Flush());
  }
  ByteWriter(&raw_).U32(static_cast<uint32_t>(record.size()));
  raw_.append(record.data(), record.size());
  ++pending_records_;
  ++records_;
  if (raw_.size() >= options_.max_chunk_bytes) return Flush();
  return Status::OK();
}

Status Writer::Flush() {
  if (closed_) return Status::FailedPrecondition("recordio writer is closed");
  if (raw_.empty()) return Status::OK();
  ChunkHeader h;
  h.compression = options_.compression;
  h.record_count = pending_records_;
  h.raw_size = static_cast<uint32_t>(raw_.size());
  std::string compressed;
  const std::string* payload = &raw_;
  if (options_.compression == Compression::kZstd) {
    compressed.resize(ZSTD_compressBound(raw_.size()));
    size_t n = ZSTD_compress(compressed.data(), compressed.size(), raw_.data(),
                             raw_.size(), options_.zstd_level);
    if (ZSTD_isError(n)) {
      return Status::IOError(std::string("zstd compress: ") +
                             ZSTD_getErrorName(n));
    }
    compressed.resize(n);
    payload = &compressed;
  }
  if (payload->size() > kMaxPayloadBytes) {
    return Status::InvalidArgument(
        "compressed chunk exceeds the recordio limit");
  }
  h.payload_size = static_cast<uint32_t>(payload->size());
  h.payload_crc = crc32c::Value(payload->data(), payload->size());
  char hdr[kHeaderSize];
  EncodeHeader(h, hdr);
  FABPS_RETURN_IF_ERROR(WriteAll(hdr, sizeof(hdr)));
  FABPS_RETURN_IF_ERROR(WriteAll(payload->data(), payload->size()));
  raw_.clear();
  pending_records_ = 0;
  ++chunks_;
  return Status::OK();
}

Status Writer::Close() {
  FABPS_RETURN_IF_ERROR(Flush());
  if (::fsync(fd_) != 0) return PosixError("fsync " + path_ + ".tmp", errno);
  if (::close(fd_) != 0) return PosixError("close " + path_ + ".tmp", errno);
  closed_ = true;
  if (::rename((path_ + ".tmp").c_str(), path_.c_str()) != 0) {
    return PosixError("rename to " + path_, errno);
  }
  return Status::OK();
}

}  // namespace fabps::recordio
