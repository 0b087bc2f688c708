// Test utilities for tests that start real processes: spawn a child (base's
// ChildProcess) with its output in a log file, signal it, wait with a
// deadline, and kill it when the handle goes away; free ports and temporary
// directories. Tests end only the processes they started, by PID.
#ifndef FABPS_TESTS_UTIL_SUBPROCESS_H_
#define FABPS_TESTS_UTIL_SUBPROCESS_H_

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "base/child_process.h"
#include "base/status.h"

namespace fabps::testing {

// A child for a test: base's ChildProcess (signal, wait with a deadline,
// SIGKILL and reap when the handle goes away) started the way tests want.
class Subprocess : public ChildProcess {
 public:
  // Starts `argv[0]` (a path) with `argv[1..]`. stdout and stderr go to
  // `log_path` (appended) when it is not empty, else are inherited. `env` adds
  // "NAME=value" entries to the inherited environment. The child dies with
  // the test when the test's main thread started it.
  static Result<Subprocess> Start(const std::vector<std::string>& argv,
                                  const std::string& log_path,
                                  const std::vector<std::string>& env = {});

  Subprocess() = default;
  // SIGTERM, then SIGKILL after `grace_ms`; returns the wait status.
  Result<int> Stop(int grace_ms = 3000) { return ChildProcess::Stop(grace_ms); }

 private:
  explicit Subprocess(ChildProcess c) : ChildProcess(std::move(c)) {}
};

// How a program run to its end ended: its exit code (-1 when a signal ended
// it) and all it printed.
struct Exited {
  int code = -1;
  std::string output;
};
// Runs `argv` to its end with its output in `log_path` (emptied first);
// TimedOut, after killing it, when it runs past `timeout_ms`.
Result<Exited> RunToExit(const std::vector<std::string>& argv,
                         const std::string& log_path, int timeout_ms);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and
// released). Another process may take it before the caller binds; callers
// that can should bind port 0 themselves and report the port.
int FreeTcpPort();

// A fresh directory under $TMPDIR (or /tmp), removed with its contents when
// the object is destroyed unless FABPS_KEEP_TEST_DIRS is set.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Reads a whole file; empty string when it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);

// The path of a binary built by this tree, e.g.
// BuiltBinary("bench/fabps_fabric_bench").
std::string BuiltBinary(const std::string& relative);

}  // namespace fabps::testing

#endif  // FABPS_TESTS_UTIL_SUBPROCESS_H_
