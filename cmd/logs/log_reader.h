// Reading a run directory's logs (one <process>.log per process, as the
// launcher and the Slurm script leave them) merged by time: what
// fabps-logs shows.
//
// Lines are base/log.h's, text or JSON; their time, role, index and host
// are parsed. Other lines (a program's own output, a crash message, etcd)
// carry no time of their own: they keep their place after the line before
// them in the same file, with its time (the start of time at the top of a
// file). Text times are local, JSON times UTC; both become ms since the
// epoch. Where a line names no role or index, the file's name gives them
// ("pserver-1.log": pserver 1; "master-standby.log": master).
//
// Not thread safe; plain values.
#ifndef FABPS_CMD_LOGS_LOG_READER_H_
#define FABPS_CMD_LOGS_LOG_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace fabps::logs {

struct LogLine {
  int64_t time_ms = 0;  // since the epoch; 0: not known
  std::string role;     // empty: not known
  int index = -1;       // -1: not known or none
  std::string host;     // empty: not known
  std::string text;     // the line as written, without its newline
};

// Parses a base/log.h line (text or JSON); nullopt for any other line.
std::optional<LogLine> ParseLogLine(const std::string& line);

// The role and index a log file's name gives: "trainer-0.log" ->
// {"trainer", 0}; "master-standby.log" -> {"master", -1}.
void RoleOfLogFile(const std::string& file_name, std::string* role, int* index);

// One log file read as it grows: Next returns its complete lines in order,
// then nullopt until more is written. A last line without its newline waits
// for it, unless `drain` (the reader is about to stop). Lines longer than
// 1 MiB are cut there. A file that shrinks is not noticed.
class LogFile {
 public:
  // `path` need not exist yet.
  explicit LogFile(std::string path);
  ~LogFile();
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;

  std::optional<LogLine> Next(bool drain = false);
  const std::string& name() const { return name_; }  // file name

 private:
  bool Fill();  // reads what was appended; false when nothing was

  std::string path_, name_, file_role_;
  int file_index_ = -1;
  int fd_ = -1;
  std::string buf_;  // read, not yet returned
  size_t pos_ = 0;   // of the next line in buf_
  int64_t last_time_ms_ = 0;
};

struct LogFilter {
  std::string role;  // empty: any
  int index = -1;    // -1: any
  bool Keeps(const LogLine& l) const {
    return (role.empty() || l.role == role) && (index < 0 || l.index == index);
  }
};

// The *.log files of a run directory (not its subdirectories), merged by
// time: Next returns the line with the earliest time among the files' next
// lines (ties: the file first by name); nullopt once every file has no
// complete line left. Poll again later (Rescan picks up new files) to
// follow the logs as they grow.
class RunDirLogs {
 public:
  // NotFound when `run_dir` is not a directory.
  static Result<std::unique_ptr<RunDirLogs>> Open(const std::string& run_dir,
                                                  LogFilter filter);
  // Adds log files created since.
  void Rescan();
  // The next line that passes the filter, and its file's name; `drain` as
  // LogFile::Next's.
  std::optional<LogLine> Next(std::string* file_name, bool drain = false);

 private:
  RunDirLogs() = default;
  struct Source {
    std::unique_ptr<LogFile> file;
    std::optional<LogLine> head;
  };
  std::string dir_;
  LogFilter filter_;
  std::vector<Source> sources_;  // sorted by file name
};

}  // namespace fabps::logs

#endif  // FABPS_CMD_LOGS_LOG_READER_H_
