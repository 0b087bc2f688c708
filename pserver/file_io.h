// Plain POSIX files for checkpoints: a buffered appender that can fsync, a
// sequential reader that reports short reads, and the directory calls the
// write-to-temp-then-rename protocol needs. Every failure is a Status from
// PosixError naming the path.
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

class AppendFile {
 public:
  // Creates or truncates `path` (mode 0644).
  static Result<AppendFile> Create(const std::string& path);
  AppendFile(AppendFile&& other) noexcept;
  AppendFile& operator=(AppendFile&&) = delete;
  AppendFile(const AppendFile&) = delete;
  ~AppendFile();  // closes without syncing if Close was not called

  // Small appends are gathered in a 1 MiB buffer; large ones go straight
  // to write(2).
  Status Append(const void* data, size_t n);
  // Flushes the buffer and fsyncs the file.
  Status Sync();
  Status Close();
  uint64_t bytes_written() const { return written_ + buf_.size(); }

 private:
  AppendFile(int fd, std::string path);
  Status Flush();
  Status WriteAll(const void* data, size_t n);

  int fd_ = -1;
  std::string path_;
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

// fsyncs a directory, so that a rename inside it is durable.
Status SyncDir(const std::string& dir);
// rename(2), then SyncDir of the target's directory.
Status RenameDurably(const std::string& from, const std::string& to);
// Names (not paths) of the entries of `dir`.
Result<std::vector<std::string>> ListDir(const std::string& dir);
Status RemoveFile(const std::string& path);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_FILE_IO_H_
