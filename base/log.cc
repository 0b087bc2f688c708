#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
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

LogFormat InitialFormat() {
  const char* env = std::getenv("FABPS_LOG_FORMAT");
  return env != nullptr && std::strcmp(env, "json") == 0 ? LogFormat::kJson
                                                         : LogFormat::kText;
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0')
    return "unknown-host";
  return buf;
}

std::atomic<int> g_level{static_cast<int>(InitialLevel())};
std::atomic<int> g_format{static_cast<int>(InitialFormat())};
std::mutex g_who_mu;
std::string g_role = "fabps";  // guarded by g_who_mu
int g_index = -1;              // guarded by g_who_mu

const std::string& Host() {
  static const std::string host = HostName();
  return host;
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }
void SetLogFormat(LogFormat format) { g_format = static_cast<int>(format); }
LogFormat GetLogFormat() { return static_cast<LogFormat>(g_format.load()); }

bool SetLogFormatByName(const std::string& name) {
  if (name != "text" && name != "json") return false;
  SetLogFormat(name == "json" ? LogFormat::kJson : LogFormat::kText);
  ::setenv("FABPS_LOG_FORMAT", name.c_str(), 1);
  return true;
}

void SetLogRole(const std::string& role, int index) {
  std::lock_guard<std::mutex> l(g_who_mu);
  g_role = role;
  g_index = index;
}

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char u[8];
          std::snprintf(u, sizeof(u), "\\u%04x", c);
          out += u;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

LogMessage::LogMessage(LogLevel level, const char* file, int line)
    : level_(level), file_(file), line_(line) {}

LogMessage::~LogMessage() {
  static const char kLetters[] = {'D', 'I', 'W', 'E'};
  static const char* const kNames[] = {"debug", "info", "warning", "error"};
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                           now.time_since_epoch())
                           .count() %
                       1000);
  std::string role;
  int index;
  {
    std::lock_guard<std::mutex> l(g_who_mu);
    role = g_role;
    index = g_index;
  }
  const char* base = std::strrchr(file_, '/');
  std::string src =
      std::string(base ? base + 1 : file_) + ":" + std::to_string(line_);
  int lvl = static_cast<int>(level_);
  std::tm tm;
  char date[40];
  std::string s;
  if (GetLogFormat() == LogFormat::kJson) {
    gmtime_r(&t, &tm);
    std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
    char frac[8];
    std::snprintf(frac, sizeof(frac), ".%03dZ", ms);
    s = std::string("{\"time\":\"") + date + frac + "\",\"level\":\"" +
        kNames[lvl] + "\",\"role\":" + JsonQuote(role) +
        (index >= 0 ? ",\"index\":" + std::to_string(index) : "") +
        ",\"host\":" + JsonQuote(Host()) + ",\"src\":" + JsonQuote(src) +
        ",\"msg\":" + JsonQuote(os_.str()) + "}\n";
  } else {
    localtime_r(&t, &tm);
    std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
    char frac[8];
    std::snprintf(frac, sizeof(frac), ".%03d", ms);
    s = std::string(1, kLetters[lvl]) + ' ' + date + frac + ' ' + role +
        (index >= 0 ? "-" + std::to_string(index) : "") + '@' + Host() + ' ' +
        src + "] " + os_.str() + '\n';
  }
  ssize_t unused = ::write(STDERR_FILENO, s.data(), s.size());
  (void)unused;
}

}  // namespace fabps
