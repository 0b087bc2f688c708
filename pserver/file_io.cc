#include "pserver/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/file_util.h"

namespace fabps::pserver {
namespace {
constexpr size_t kBufferBytes = 1 << 20;
}

Result<AppendFile> AppendFile::Create(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return PosixError("create " + path, errno);
  return AppendFile(fd, path);
}

AppendFile::AppendFile(int fd, std::string path)
    : fd_(fd), path_(std::move(path)) {
  buf_.reserve(kBufferBytes);
}

AppendFile::AppendFile(AppendFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      path_(std::move(o.path_)),
      buf_(std::move(o.buf_)),
      written_(o.written_) {}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status AppendFile::WriteAll(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return PosixError("write " + path_, errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
    written_ += static_cast<uint64_t>(w);
  }
  return Status::OK();
}

Status AppendFile::Flush() {
  if (buf_.empty()) return Status::OK();
  Status s = WriteAll(buf_.data(), buf_.size());
  buf_.clear();
  return s;
}

Status AppendFile::Append(const void* data, size_t n) {
  if (buf_.size() + n <= kBufferBytes) {
    const char* p = static_cast<const char*>(data);
    buf_.insert(buf_.end(), p, p + n);
    return Status::OK();
  }
  FABPS_RETURN_IF_ERROR(Flush());
  if (n >= kBufferBytes) return WriteAll(data, n);
  const char* p = static_cast<const char*>(data);
  buf_.insert(buf_.end(), p, p + n);
  return Status::OK();
}

Status AppendFile::Sync() {
  FABPS_RETURN_IF_ERROR(Flush());
  if (::fsync(fd_) != 0) return PosixError("fsync " + path_, errno);
  return Status::OK();
}

Status AppendFile::Close() {
  FABPS_RETURN_IF_ERROR(Flush());
  int fd = std::exchange(fd_, -1);
  if (fd >= 0 && ::close(fd) != 0) return PosixError("close " + path_, errno);
  return Status::OK();
}

Result<ReadFile> ReadFile::Open(const std::string& path) {
  FABPS_ASSIGN_OR_RETURN(OpenedFile file, OpenRegularFile(path));
  return ReadFile(file.fd, path, file.size);
}

ReadFile::ReadFile(int fd, std::string path, uint64_t size)
    : fd_(fd), path_(std::move(path)), size_(size) {}

ReadFile::ReadFile(ReadFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      path_(std::move(o.path_)),
      size_(o.size_),
      pos_(o.pos_) {}

ReadFile::~ReadFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status ReadFile::ReadExactly(void* out, size_t n, const char* what) {
  char* p = static_cast<char*>(out);
  size_t want = n;
  while (n > 0) {
    ssize_t r = ::read(fd_, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return PosixError("read " + path_, errno);
    }
    if (r == 0) {
      return Status::Corruption("truncated: file ends at byte " +
                                std::to_string(pos_) + " inside " + what +
                                " (" + std::to_string(want) + " bytes wanted)");
    }
    p += r;
    n -= static_cast<size_t>(r);
    pos_ += static_cast<uint64_t>(r);
  }
  return Status::OK();
}

Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return PosixError("open directory " + dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return PosixError("fsync directory " + dir, err);
  return Status::OK();
}

Status RenameDurably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return PosixError("rename " + from + " to " + to, errno);
  }
  size_t slash = to.find_last_of('/');
  return SyncDir(slash == std::string::npos ? "." : to.substr(0, slash));
}

Result<std::vector<std::string>> ListDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return PosixError("open directory " + dir, errno);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(d);
  return names;
}

Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return PosixError("remove " + path, errno);
  }
  return Status::OK();
}

}  // namespace fabps::pserver
