#include "coord/local/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace fabps::coord::local {

Status PreadAll(int fd, char* buf, size_t n, off_t off,
                const std::string& what) {
  size_t done = 0;
  while (done < n) {
    ssize_t r =
        ::pread(fd, buf + done, n - done, off + static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return PosixError("read " + what, errno);
    if (r == 0) return Status::Corruption(what + ": unexpected end of file");
    done += static_cast<size_t>(r);
  }
  return Status::OK();
}

Status PwriteAll(int fd, const std::string& data, off_t off,
                 const std::string& what) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t r = ::pwrite(fd, data.data() + done, data.size() - done,
                         off + static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return PosixError("write " + what, errno);
    done += static_cast<size_t>(r);
  }
  return Status::OK();
}

Status ReadSmallFile(const std::string& path, uint64_t max, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return PosixError("open " + path, errno);
  struct stat st;
  Status s;
  if (::fstat(fd, &st) != 0) {
    s = PosixError("stat " + path, errno);
  } else if (static_cast<uint64_t>(st.st_size) > max) {
    s = Status::Corruption(path + " is " + std::to_string(st.st_size) +
                           " bytes, over the limit");
  } else {
    out->resize(static_cast<size_t>(st.st_size));
    s = PreadAll(fd, out->data(), out->size(), 0, path);
  }
  ::close(fd);
  return s;
}

}  // namespace fabps::coord::local
