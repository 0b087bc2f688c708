// Plain POSIX files for checkpoints: a buffered appender, a sequential
// reader that reports short reads, and the directory listing and removal the
// rotation needs. The durable write-to-temp-then-rename protocol is base's
// WriteFileDurably (base/file_util.h). Every failure is a Status naming the
// path.
//
// Thread safety: one object per thread; the free functions are thread-safe.
#ifndef FABPS_PSERVER_FILE_IO_H_
#define FABPS_PSERVER_FILE_IO_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace fabps::pserver {

// Buffered appends to a descriptor the caller owns (and keeps open while
// this object lives), e.g. the one base's WriteFileDurably lends. `name`
// only names the file in errors.
class AppendFile {
 public:
  AppendFile(int fd, std::string name);
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;
  // Drops what Flush has not written: call Flush first.
  ~AppendFile() = default;

  // Small appends are gathered in a 1 MiB buffer; large ones go straight
  // to write(2).
  Status Append(const void* data, size_t n);
  // Writes out the buffer (no fsync: the owner of the descriptor syncs).
  Status Flush();
  uint64_t bytes_written() const { return written_ + buf_.size(); }

 private:
  Status WriteOut(const void* data, size_t n);

  int fd_ = -1;
  std::string name_;
  std::vector<char> buf_;
  uint64_t written_ = 0;
};

class ReadFile {
 public:
  static Result<ReadFile> Open(const std::string& path);
  ReadFile(ReadFile&& other) noexcept;
  ReadFile& operator=(ReadFile&&) = delete;
  ReadFile(const ReadFile&) = delete;
  ~ReadFile();

  // Reads exactly n bytes; Corruption "truncated" when the file ends first.
  Status ReadExactly(void* out, size_t n, const char* what);
  uint64_t size() const { return size_; }
  uint64_t position() const { return pos_; }

 private:
  ReadFile(int fd, std::string path, uint64_t size);

  int fd_ = -1;
  std::string path_;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
};

// Names (not paths) of the entries of `dir`.
Result<std::vector<std::string>> ListDir(const std::string& dir);
Status RemoveFile(const std::string& path);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_FILE_IO_H_
