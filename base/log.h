// Minimal logging to stderr: one line per message, with time, level, the
// process tag (set once by main, e.g. "pserver-1") and source location.
//   FABPS_LOG(INFO) << "provider " << name;
// Thread safe: each message is written with one write(2).
#ifndef FABPS_BASE_LOG_H_
#define FABPS_BASE_LOG_H_

#include <sstream>
#include <string>

namespace fabps {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Messages below `level` are dropped. Default kInfo; FABPS_LOG_LEVEL=debug
// in the environment lowers it.
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void SetLogTag(const std::string& tag);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return os_; }

 private:
  LogLevel level_;
  std::ostringstream os_;
};

// Turns the stream expression into void for FABPS_LOG's conditional.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace fabps

#define FABPS_LOG_LEVEL_DEBUG ::fabps::LogLevel::kDebug
#define FABPS_LOG_LEVEL_INFO ::fabps::LogLevel::kInfo
#define FABPS_LOG_LEVEL_WARNING ::fabps::LogLevel::kWarning
#define FABPS_LOG_LEVEL_ERROR ::fabps::LogLevel::kError
// An expression, not an if/else, so that `if (x) FABPS_LOG(INFO) << y;`
// has no dangling else; `&` binds looser than `<<`.
#define FABPS_LOG(level)                                                     \
  (FABPS_LOG_LEVEL_##level < ::fabps::GetLogLevel())                         \
      ? (void)0                                                              \
      : ::fabps::LogVoidify() &                                              \
            ::fabps::LogMessage(FABPS_LOG_LEVEL_##level, __FILE__, __LINE__) \
                .stream()

#endif  // FABPS_BASE_LOG_H_
