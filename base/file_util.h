// Small file helpers shared by the daemons and tools.
#ifndef FABPS_BASE_FILE_UTIL_H_
#define FABPS_BASE_FILE_UTIL_H_

#include <string>

#include "base/status.h"

namespace fabps {

// Writes `contents` to "<path>.tmp", fsyncs it and renames it over `path`,
// so readers see either the old file or the whole new one.
Status WriteFileAtomically(const std::string& path,
                           const std::string& contents);

// Reads a whole file. NotFound when it does not exist; at most `max_bytes`
// (ResourceExhausted beyond).
Result<std::string> ReadWholeFile(const std::string& path,
                                  size_t max_bytes = size_t{1} << 30);

}  // namespace fabps

#endif  // FABPS_BASE_FILE_UTIL_H_
