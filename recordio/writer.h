// recordio::Writer appends records to a new recordio file, cutting a chunk
// whenever the buffered records reach `max_chunk_bytes`.
//
// The file is written under "<path>.tmp" and renamed to `path` by Close()
// after an fsync, so a reader never sees a half-written file under its final
// name. Destroying a Writer without Close() removes the temporary file.
//
// Thread safety: none; one thread uses a Writer at a time.
#ifndef FABPS_RECORDIO_WRITER_H_
#define FABPS_RECORDIO_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "recordio/format.h"

namespace fabps::recordio {

struct WriterOptions {
  // A chunk is closed once its raw payload reaches this many bytes. A record
  // larger than this gets a chunk of its own.
  size_t max_chunk_bytes = 4u << 20;
  Compression compression = Compression::kZstd;
  int zstd_level = 3;
};

class Writer {
 public:
  // Creates "<path>.tmp" (truncating it). Errors: IOError, InvalidArgument
  // for options out of range (max_chunk_bytes must be in [1, 256 MiB)).
  static Result<std::unique_ptr<Writer>> Create(
      const std::string& path, const WriterOptions& options = {});
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Buffers one record; may write a chunk. InvalidArgument if the record is
  // larger than kMaxRecordBytes, IOError if a write fails.
  Status Append(std::string_view record);
  // Writes the buffered records as a chunk (no-op when empty).
  Status Flush();
  // Flushes, fsyncs, closes and renames to the final path. Calling anything
  // but the destructor afterwards is an error.
  Status Close();

  uint64_t records_written() const { return records_; }
  uint64_t chunks_written() const { return chunks_; }

 private:
  Writer(std::string path, int fd, const WriterOptions& options);
  Status WriteAll(const char* p, size_t n);

  std::string path_;
  int fd_;
  WriterOptions options_;
  std::string raw_;  // length-prefixed records of the open chunk
  uint32_t pending_records_ = 0;
  uint64_t records_ = 0;
  uint64_t chunks_ = 0;
  bool closed_ = false;
};

}  // namespace fabps::recordio

#endif  // FABPS_RECORDIO_WRITER_H_
