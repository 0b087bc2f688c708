#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace fabps {

Status WriteAll(int fd, const void* data, size_t n, const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return PosixError("write " + what, errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

std::string TempPathFor(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return "." + path + ".tmp";
  return path.substr(0, slash + 1) + "." + path.substr(slash + 1) + ".tmp";
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

Status WriteFileDurably(const std::string& path,
                        const std::function<Status(int fd)>& fill) {
  const std::string tmp = TempPathFor(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return PosixError("create " + tmp, errno);
  Status s = fill(fd);
  // The data must be on disk before the rename makes it the file: else a
  // crash can leave `path` naming an empty or partial file.
  if (s.ok() && ::fsync(fd) != 0) s = PosixError("fsync " + tmp, errno);
  if (::close(fd) != 0 && s.ok()) s = PosixError("close " + tmp, errno);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = PosixError("rename " + tmp + " to " + path, errno);
  }
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename lives in the directory: until it is synced a crash can bring
  // back the old file (or none).
  size_t slash = path.find_last_of('/');
  return SyncDir(slash == std::string::npos ? "."
                 : slash == 0               ? "/"
                                            : path.substr(0, slash));
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  return WriteFileDurably(path, [&](int fd) {
    return WriteAll(fd, contents.data(), contents.size(), TempPathFor(path));
  });
}

Result<OpenedFile> OpenRegularFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return PosixError("open " + path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return PosixError("stat " + path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument(path + " is not a regular file");
  }
  return OpenedFile{fd, static_cast<uint64_t>(st.st_size)};
}

Result<std::string> ReadWholeFile(const std::string& path, size_t max_bytes) {
  FABPS_ASSIGN_OR_RETURN(OpenedFile file, OpenRegularFile(path));
  const int fd = file.fd;
  if (file.size > max_bytes) {
    ::close(fd);
    return Status::ResourceExhausted(path + ": larger than " +
                                     std::to_string(max_bytes) + " bytes");
  }
  std::string out(static_cast<size_t>(file.size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    ssize_t r = ::read(fd, out.data() + done, out.size() - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return PosixError("read " + path, err);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  ::close(fd);
  out.resize(done);
  return out;
}

}  // namespace fabps
