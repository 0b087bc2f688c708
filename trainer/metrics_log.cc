#include "trainer/metrics_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/log.h"

namespace fabps::trainer {

Result<std::unique_ptr<MetricsLog>> MetricsLog::Open(const std::string& path) {
  int fd = -1;
  if (!path.empty()) {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError("open metrics file " + path, errno);
  }
  return std::unique_ptr<MetricsLog>(new MetricsLog(fd));
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::Write(const MetricsLine& line) {
  std::string text = line.str() + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (fd_ < 0) return;
  ssize_t n;
  do {
    n = ::write(fd_, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(text.size()) && !warned_) {
    warned_ = true;
    FABPS_LOG(WARNING) << "appending to the metrics file failed: "
                       << (n < 0 ? PosixError("write", errno).ToString()
                                 : std::string("short write"));
  }
}

}  // namespace fabps::trainer
