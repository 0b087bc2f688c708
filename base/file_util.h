// Small file helpers shared by the daemons and tools.
#ifndef FABPS_BASE_FILE_UTIL_H_
#define FABPS_BASE_FILE_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace fabps {

// Durable replacement of a file: the new contents are written to a temporary
// sibling "<dir>/.<name>.tmp" (TempPathFor), fsynced, renamed over `path`,
// and the directory is fsynced, so readers see either the old file or the
// whole new one, and once OK is returned a crash keeps the new one. On any
// error the temporary file is removed and `path` is left as it was. Writers
// of the same path must not run at once (they share the temporary name);
// writers of different paths may.

// Calls `fill` with a descriptor of the fresh (empty, 0644) temporary file;
// `fill` writes the contents through it and must not close it.
Status WriteFileDurably(const std::string& path,
                        const std::function<Status(int fd)>& fill);
// The same with the contents in memory.
Status WriteFileAtomically(const std::string& path, std::string_view contents);
// "<dir>/.<name>.tmp" for "<dir>/<name>" (".<name>.tmp" without a '/').
std::string TempPathFor(const std::string& path);
// fsyncs a directory, so that renames and creations inside it are durable.
Status SyncDir(const std::string& dir);
// write(2) of all `n` bytes, retrying on EINTR and short writes; errors
// name `what`.
Status WriteAll(int fd, const void* data, size_t n, const std::string& what);

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
