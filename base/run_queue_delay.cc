#include "base/run_queue_delay.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace fabps {

RunQueueDelay::RunQueueDelay() {
  fd_ = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (auto t = Read()) {
    last_ = *t;
    last_read_ = std::chrono::steady_clock::now();
  } else if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

RunQueueDelay::~RunQueueDelay() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<RunQueueDelay::Times> RunQueueDelay::Read() const {
  if (fd_ < 0) return std::nullopt;
  // "<ns on the CPU> <ns waiting on a run queue> <timeslices>\n"
  char buf[96];
  ssize_t n;
  do {
    n = ::pread(fd_, buf, sizeof(buf) - 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  char* end = nullptr;
  const uint64_t on_cpu = std::strtoull(buf, &end, 10);
  if (end == buf || *end != ' ') return std::nullopt;
  const char* wait = end + 1;
  const uint64_t waiting = std::strtoull(wait, &end, 10);
  if (end == wait) return std::nullopt;
  return Times{on_cpu, waiting};
}

void RunQueueDelay::Restart(std::chrono::steady_clock::time_point now) {
  if (auto t = Read()) {
    last_ = *t;
    last_read_ = now;
  }
}

bool RunQueueDelay::Contended(std::chrono::steady_clock::time_point now,
                              std::chrono::microseconds interval,
                              double share) {
  if (fd_ < 0 || now - last_read_ < interval) return contended_;
  auto t = Read();
  if (!t) return contended_;
  const uint64_t ran = t->on_cpu_ns - last_.on_cpu_ns;
  const uint64_t waited = t->waiting_ns - last_.waiting_ns;
  if (ran + waited > 0) {
    contended_ =
        static_cast<double>(waited) > share * static_cast<double>(ran + waited);
  }
  last_ = *t;
  last_read_ = now;
  return contended_;
}

}  // namespace fabps
