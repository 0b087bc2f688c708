// Small POSIX file helpers of the local store (internal to coord/local/):
// whole reads and writes that retry on EINTR and short transfers. The
// durable replacement of a file is base/file_util.h's WriteFileAtomically.
// Errors are Statuses naming the file; a short read is kCorruption (the file
// is shorter than its own metadata says).
#ifndef FABPS_COORD_LOCAL_FILE_UTIL_H_
#define FABPS_COORD_LOCAL_FILE_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace fabps::coord::local {

Status PreadAll(int fd, char* buf, size_t n, off_t off,
                const std::string& what);
Status PwriteAll(int fd, const std::string& data, off_t off,
                 const std::string& what);
// Reads all of `path`; kCorruption when it is larger than `max` bytes.
Status ReadSmallFile(const std::string& path, uint64_t max, std::string* out);

}  // namespace fabps::coord::local

#endif  // FABPS_COORD_LOCAL_FILE_UTIL_H_
