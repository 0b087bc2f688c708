#include "examples/fashion_mnist/metrics_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>

#include "base/log.h"

namespace fabps::examples::fashion_mnist {

void JsonLine::Key(const char* key) {
  if (body_.size() > 1) body_ += ',';
  body_ += '"';
  body_ += key;
  body_ += "\":";
}

JsonLine& JsonLine::Add(const char* key, const std::string& value) {
  Key(key);
  body_ += '"';
  for (char c : value) {
    if (c == '"' || c == '\\') {
      body_ += '\\';
      body_ += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\u%04x", static_cast<unsigned>(c));
      body_ += esc;
    } else {
      body_ += c;
    }
  }
  body_ += '"';
  return *this;
}

JsonLine& JsonLine::Add(const char* key, const char* value) {
  return Add(key, std::string(value));
}

JsonLine& JsonLine::Add(const char* key, int64_t value) {
  Key(key);
  body_ += std::to_string(value);
  return *this;
}

JsonLine& JsonLine::Add(const char* key, double value) {
  Key(key);
  if (!std::isfinite(value)) {
    body_ += "null";
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", value);
  body_ += buf;
  return *this;
}

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

void MetricsLog::Write(const JsonLine& line) {
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

}  // namespace fabps::examples::fashion_mnist
