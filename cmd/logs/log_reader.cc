#include "cmd/logs/log_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cmd/launch/supervisor.h"

namespace fs = std::filesystem;

namespace fabps::logs {
namespace {

constexpr size_t kMaxLine = size_t{1} << 20;

// "name-12" -> {"name", 12}; otherwise {who, -1}.
void SplitIndex(const std::string& who, std::string* role, int* index) {
  size_t dash = who.rfind('-');
  *role = who;
  *index = -1;
  if (dash == std::string::npos || dash + 1 >= who.size() ||
      who.size() - dash - 1 > 6)
    return;
  for (size_t i = dash + 1; i < who.size(); i++)
    if (who[i] < '0' || who[i] > '9') return;
  *index = std::stoi(who.substr(dash + 1));
  role->resize(dash);
}

// "2026-12-04" + "14:27:40.394" as local time (utc: as UTC); 0 when
// malformed.
int64_t ParseTime(const char* date, const char* time, bool utc) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(date, "%4d-%2d-%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday) !=
          3 ||
      std::sscanf(time, "%2d:%2d:%2d.%3d", &tm.tm_hour, &tm.tm_min, &tm.tm_sec,
                  &ms) != 4)
    return 0;
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
      tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60 || ms < 0 || ms > 999)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_isdst = -1;
  time_t t = utc ? timegm(&tm) : mktime(&tm);
  if (t == static_cast<time_t>(-1)) return 0;
  return int64_t{t} * 1000 + ms;
}

bool Digits(const std::string& s, size_t from, size_t n) {
  for (size_t i = from; i < from + n; i++)
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
  return true;
}

std::optional<LogLine> ParseText(const std::string& line) {
  // "I 2026-12-04 14:27:40.394 pserver-1@node7 main.cc:178] message"
  if (line.size() < 28 ||
      std::string("DIWE").find(line[0]) == std::string::npos || line[1] != ' ')
    return std::nullopt;
  if (!Digits(line, 2, 4) || line[6] != '-' || line[12] != ' ' ||
      line[15] != ':' || line[21] != '.' || line[25] != ' ')
    return std::nullopt;
  size_t end = line.find(' ', 26);
  if (end == std::string::npos) return std::nullopt;
  std::string who = line.substr(26, end - 26);
  size_t at = who.find('@');
  if (at == std::string::npos || at == 0) return std::nullopt;
  LogLine l;
  l.time_ms = ParseTime(line.substr(2, 10).c_str(), line.substr(13, 12).c_str(),
                        /*utc=*/false);
  if (l.time_ms == 0) return std::nullopt;
  SplitIndex(who.substr(0, at), &l.role, &l.index);
  l.host = who.substr(at + 1);
  l.text = line;
  return l;
}

std::optional<LogLine> ParseJson(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("time") ||
      !j["time"].is_string())
    return std::nullopt;
  // "2026-12-04T13:27:40.394Z"
  std::string t = j["time"].get<std::string>();
  if (t.size() != 24 || t[10] != 'T' || t[23] != 'Z') return std::nullopt;
  LogLine l;
  l.time_ms =
      ParseTime(t.substr(0, 10).c_str(), t.substr(11, 12).c_str(), true);
  if (l.time_ms == 0) return std::nullopt;
  if (j.contains("role") && j["role"].is_string())
    l.role = j["role"].get<std::string>();
  if (j.contains("index") && j["index"].is_number_integer())
    l.index = j["index"].get<int>();
  if (j.contains("host") && j["host"].is_string())
    l.host = j["host"].get<std::string>();
  l.text = line;
  return l;
}

}  // namespace

std::optional<LogLine> ParseLogLine(const std::string& line) {
  if (!line.empty() && line[0] == '{') return ParseJson(line);
  return ParseText(line);
}

void RoleOfLogFile(const std::string& file_name, std::string* role,
                   int* index) {
  std::string stem = file_name;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".log") == 0)
    stem.resize(stem.size() - 4);
  std::string ignored;
  SplitIndex(stem, &ignored, index);
  *role = launch::RoleOf(stem);  // the launcher's naming, in one place
}

LogFile::LogFile(std::string path) : path_(std::move(path)) {
  name_ = fs::path(path_).filename().string();
  RoleOfLogFile(name_, &file_role_, &file_index_);
}

LogFile::~LogFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool LogFile::Fill() {
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return false;
  }
  if (pos_ > 0) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  char chunk[1 << 16];
  bool got = false;
  while (buf_.size() < 4 * kMaxLine) {
    ssize_t n = ::read(fd_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf_.append(chunk, static_cast<size_t>(n));
    got = true;
  }
  return got;
}

std::optional<LogLine> LogFile::Next(bool drain) {
  for (int attempt = 0; attempt < 2; attempt++) {
    size_t nl = buf_.find('\n', pos_);
    std::string text;
    if (nl != std::string::npos && nl - pos_ <= kMaxLine) {
      text = buf_.substr(pos_, nl - pos_);
      pos_ = nl + 1;
    } else if (buf_.size() - pos_ >= kMaxLine) {
      text = buf_.substr(pos_, kMaxLine);  // cut: the rest follows
      pos_ += kMaxLine;
    } else if (attempt == 0 && Fill()) {
      continue;
    } else if (drain && pos_ < buf_.size()) {
      text = buf_.substr(pos_);  // a last line without its newline
      pos_ = buf_.size();
    } else {
      return std::nullopt;
    }
    std::optional<LogLine> parsed = ParseLogLine(text);
    LogLine l = parsed ? std::move(*parsed) : LogLine{};
    if (!parsed) {
      l.text = std::move(text);
      l.time_ms = last_time_ms_;
    }
    last_time_ms_ = std::max(last_time_ms_, l.time_ms);
    if (l.role.empty()) l.role = file_role_;
    if (l.index < 0) l.index = file_index_;
    return l;
  }
  return std::nullopt;
}

Result<std::unique_ptr<RunDirLogs>> RunDirLogs::Open(const std::string& run_dir,
                                                     LogFilter filter) {
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec))
    return Status::NotFound(run_dir + ": not a directory");
  std::unique_ptr<RunDirLogs> r(new RunDirLogs());
  r->dir_ = run_dir;
  r->filter_ = std::move(filter);
  r->Rescan();
  return r;
}

void RunDirLogs::Rescan() {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".log") != 0 ||
        !e.is_regular_file(ec))
      continue;
    bool known =
        std::any_of(sources_.begin(), sources_.end(),
                    [&](const Source& s) { return s.file->name() == name; });
    if (!known)
      sources_.push_back({std::make_unique<LogFile>(e.path().string()), {}});
  }
  std::sort(sources_.begin(), sources_.end(),
            [](const Source& a, const Source& b) {
              return a.file->name() < b.file->name();
            });
}

std::optional<LogLine> RunDirLogs::Next(std::string* file_name, bool drain) {
  Source* best = nullptr;
  for (Source& s : sources_) {
    while (!s.head) {
      s.head = s.file->Next(drain);
      if (!s.head) break;
      if (!filter_.Keeps(*s.head)) s.head.reset();
    }
    if (s.head && (best == nullptr || s.head->time_ms < best->head->time_ms))
      best = &s;
  }
  if (best == nullptr) return std::nullopt;
  if (file_name != nullptr) *file_name = best->file->name();
  std::optional<LogLine> out = std::move(best->head);
  best->head.reset();
  return out;
}

}  // namespace fabps::logs
