// MetricsLog: where a trainer's metrics lines (trainer/metrics_line.h) go.
// Each line is printed to stdout and, when a file is given, appended to it.
//
// Several trainers may append to one file: it is opened with O_APPEND and
// each line goes out in a single write(2), so lines never interleave.
//
// Thread safety: none; the trainer's main thread writes.
#ifndef FABPS_TRAINER_METRICS_LOG_H_
#define FABPS_TRAINER_METRICS_LOG_H_

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "trainer/metrics_line.h"

namespace fabps::trainer {

class MetricsLog {
 public:
  // `path` empty: stdout only. IOError when the file cannot be opened.
  static Result<std::unique_ptr<MetricsLog>> Open(const std::string& path);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // Prints the line and appends it to the file; a failed append is logged
  // once (metrics must not stop training).
  void Write(const MetricsLine& line);

 private:
  explicit MetricsLog(int fd) : fd_(fd) {}
  int fd_;  // -1: no file
  bool warned_ = false;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_METRICS_LOG_H_
