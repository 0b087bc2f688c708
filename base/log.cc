#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace fabps {
namespace {

LogLevel InitialLevel() {
  const char* env = std::getenv("FABPS_LOG_LEVEL");
  if (env == nullptr) return LogLevel::kInfo;
  if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(env, "warning") == 0) return LogLevel::kWarning;
  if (std::strcmp(env, "error") == 0) return LogLevel::kError;
  return LogLevel::kInfo;
}

std::atomic<int> g_level{static_cast<int>(InitialLevel())};
std::mutex g_tag_mu;
std::string g_tag = "fabps";

}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }
void SetLogTag(const std::string& tag) {
  std::lock_guard<std::mutex> l(g_tag_mu);
  g_tag = tag;
}

LogMessage::LogMessage(LogLevel level, const char* file, int line)
    : level_(level) {
  static const char kLetters[] = {'D', 'I', 'W', 'E'};
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                           now.time_since_epoch())
                           .count() %
                       1000);
  std::tm tm;
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
  const char* base = std::strrchr(file, '/');
  std::string tag;
  {
    std::lock_guard<std::mutex> l(g_tag_mu);
    tag = g_tag;
  }
  os_ << kLetters[static_cast<int>(level)] << ' ' << buf << '.' << (ms / 100)
      << ((ms / 10) % 10) << (ms % 10) << ' ' << tag << ' '
      << (base ? base + 1 : file) << ':' << line << "] ";
}

LogMessage::~LogMessage() {
  os_ << '\n';
  std::string s = os_.str();
  ssize_t unused = ::write(STDERR_FILENO, s.data(), s.size());
  (void)unused;
  (void)level_;
}

}  // namespace fabps
