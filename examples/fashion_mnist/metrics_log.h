// MetricsLog: the trainer's JSON-lines output. Each event is one line
// printed to stdout and, when a file is given, appended to it.
//
// Several trainers may append to one file: it is opened with O_APPEND and
// each line goes out in a single write(2), so lines never interleave.
// Non-finite numbers (the loss of a pass that saw no records) are written
// as null to keep every line valid JSON.
//
// Thread safety: none; the trainer's main thread writes.
#ifndef FABPS_EXAMPLES_FASHION_MNIST_METRICS_LOG_H_
#define FABPS_EXAMPLES_FASHION_MNIST_METRICS_LOG_H_

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace fabps::examples::fashion_mnist {

// Builds one JSON object, keys in insertion order. Keys are not escaped:
// callers pass fixed identifiers.
class JsonLine {
 public:
  JsonLine& Add(const char* key, const std::string& value);
  JsonLine& Add(const char* key, const char* value);
  JsonLine& Add(const char* key, int64_t value);
  JsonLine& Add(const char* key, double value);
  // "{...}" without a newline.
  std::string str() const { return body_ + "}"; }

 private:
  void Key(const char* key);
  std::string body_ = "{";
};

class MetricsLog {
 public:
  // `path` empty: stdout only. IOError when the file cannot be opened.
  static Result<std::unique_ptr<MetricsLog>> Open(const std::string& path);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // Prints the line and appends it to the file; a failed append is logged
  // once (metrics must not stop training).
  void Write(const JsonLine& line);

 private:
  explicit MetricsLog(int fd) : fd_(fd) {}
  int fd_;  // -1: no file
  bool warned_ = false;
};

}  // namespace fabps::examples::fashion_mnist

#endif  // FABPS_EXAMPLES_FASHION_MNIST_METRICS_LOG_H_
