// Small file helpers shared by the daemons and tools.
#ifndef FABPS_BASE_FILE_UTIL_H_
#define FABPS_BASE_FILE_UTIL_H_

#include <cstdint>
#include <string>

#include "base/status.h"

namespace fabps {

// Writes `contents` to "<path>.tmp", fsyncs it and renames it over `path`,
// so readers see either the old file or the whole new one.
Status WriteFileAtomically(const std::string& path,
                           const std::string& contents);

// A file opened read-only (O_CLOEXEC) and its size at opening; the caller
// owns (closes) fd.
struct OpenedFile {
  int fd = -1;
  uint64_t size = 0;
};
// NotFound when `path` does not exist, InvalidArgument when it is not a
// regular file, other errors as PosixError; each names the path.
Result<OpenedFile> OpenRegularFile(const std::string& path);

// Reads a whole file. NotFound when it does not exist; at most `max_bytes`
// (ResourceExhausted beyond).
Result<std::string> ReadWholeFile(const std::string& path,
                                  size_t max_bytes = size_t{1} << 30);

}  // namespace fabps

#endif  // FABPS_BASE_FILE_UTIL_H_
