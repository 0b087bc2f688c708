#include "master/dataset.h"

#include <glob.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "recordio/reader.h"

namespace fabps::master {
namespace {

// glob(3) reports unreadable directories through a callback without a
// context pointer: the first one of this thread's current glob lands here.
struct GlobFailure {
  std::string path;
  int error = 0;
};
thread_local GlobFailure* current_failure = nullptr;

// A directory that does not exist (or is a file) only means the pattern
// matches nothing there: glob goes on and ends in GLOB_NOMATCH, which is
// NotFound. Any other error (permission, I/O) stops it.
int OnGlobError(const char* path, int error) {
  if (error == ENOENT || error == ENOTDIR) return 0;
  if (current_failure != nullptr && current_failure->error == 0) {
    current_failure->path = path;
    current_failure->error = error;
  }
  return 1;
}

}  // namespace

Result<std::vector<TaskDef>> BuildTasks(const std::vector<std::string>& globs,
                                        int chunks_per_task) {
  if (chunks_per_task < 1)
    return Status::InvalidArgument("chunks_per_task must be >= 1");
  if (globs.empty()) return Status::InvalidArgument("no dataset globs given");
  if (globs.size() > kMaxGlobs)
    return Status::InvalidArgument("too many globs");
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (const std::string& pattern : globs) {
    if (pattern.empty() || pattern.size() > kMaxPathBytes) {
      return Status::InvalidArgument("glob is empty or too long");
    }
    glob_t g{};
    GlobFailure failure;
    current_failure = &failure;
    int rc = ::glob(pattern.c_str(), 0, OnGlobError, &g);
    current_failure = nullptr;
    if (rc == GLOB_NOMATCH) {
      globfree(&g);
      return Status::NotFound("dataset glob '" + pattern + "' matches no file");
    }
    if (rc != 0) {
      globfree(&g);
      std::string why = failure.error != 0 ? ": " + failure.path + ": " +
                                                 std::strerror(failure.error)
                                           : std::string(" failed");
      return Status::IOError("dataset glob '" + pattern + "'" + why);
    }
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      std::string f = g.gl_pathv[i];
      if (f.size() <= kMaxPathBytes && seen.insert(f).second)
        files.push_back(f);
    }
    globfree(&g);
  }
  std::vector<TaskDef> tasks;
  TaskDef current;
  for (const std::string& f : files) {
    FABPS_ASSIGN_OR_RETURN(auto refs, recordio::IndexFile(f));
    for (auto& ref : refs) {
      current.chunks.push_back(std::move(ref));
      if (current.chunks.size() == static_cast<size_t>(chunks_per_task)) {
        tasks.push_back(std::move(current));
        current = TaskDef();
        if (tasks.size() > kMaxTasks)
          return Status::InvalidArgument("dataset has too many tasks");
      }
    }
  }
  if (!current.chunks.empty()) tasks.push_back(std::move(current));
  if (tasks.empty()) return Status::InvalidArgument("dataset has no chunks");
  return tasks;
}

}  // namespace fabps::master
