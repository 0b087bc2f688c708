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

AppendFile::AppendFile(int fd, std::string name)
    : fd_(fd), name_(std::move(name)) {
  buf_.reserve(kBufferBytes);
}

Status AppendFile::WriteOut(const void* data, size_t n) {
  FABPS_RETURN_IF_ERROR(WriteAll(fd_, data, n, name_));
  written_ += n;
  return Status::OK();
}

Status AppendFile::Flush() {
  if (buf_.empty()) return Status::OK();
  Status s = WriteOut(buf_.data(), buf_.size());
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
  if (n >= kBufferBytes) return WriteOut(data, n);
  const char* p = static_cast<const char*>(data);
  buf_.insert(buf_.end(), p, p + n);
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
