// Minimal logging to stderr: one line per message.
//   FABPS_LOG(INFO) << "provider " << name;
// Every line names its process: role, index (once known) and host, so that
// the logs of a whole job can be merged and filtered (cmd/logs).
//
// Text (the default):
//   I 2026-12-04 14:27:40.394 pserver-1@node7 main.cc:178] claimed index 1
//   level date time(local, ms) role[-index]@host file:line] message
// JSON lines (SetLogFormat(kJson), --log-format json, FABPS_LOG_FORMAT=json):
//   {"time":"2026-12-04T13:27:40.394Z","level":"info","role":"pserver",
//    "index":1,"host":"node7","src":"main.cc:178","msg":"claimed index 1"}
//   (one line; time in UTC; "index" only once known; the message escaped
//   as JSON: quotes, backslashes and control characters; other bytes as
//   they are).
// Thread safe: each message is written with one write(2).
#ifndef FABPS_BASE_LOG_H_
#define FABPS_BASE_LOG_H_

#include <sstream>
#include <string>

namespace fabps {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };
enum class LogFormat { kText = 0, kJson = 1 };

// Messages below `level` are dropped. Default kInfo; FABPS_LOG_LEVEL=debug
// in the environment lowers it.
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Default kText, or kJson when FABPS_LOG_FORMAT=json in the environment.
void SetLogFormat(LogFormat format);
LogFormat GetLogFormat();
// "text" or "json" (else false and nothing changes). Also sets
// FABPS_LOG_FORMAT, so that the processes this one starts log alike.
bool SetLogFormatByName(const std::string& name);
// Who this process is, set by main: a role ("master", "pserver", "trainer",
// "convert-records") and, once known, an index (-1: none). Until set the
// role is "fabps". The host is this machine's name.
void SetLogRole(const std::string& role, int index = -1);

// Quotes `s` as a JSON string: quotes, backslashes and control characters
// escaped; other bytes as they are.
std::string JsonQuote(const std::string& s);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return os_; }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
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
