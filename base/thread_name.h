// Names the calling thread, so that `top -H`, `perf report --sort comm` and
// /proc/<pid>/task/<tid>/comm tell a process's threads apart (progress,
// apply, rpc, ...). Linux keeps at most 15 bytes: longer names are cut.
// Best effort: a failure is ignored (a name is a diagnostic aid only).
#ifndef FABPS_BASE_THREAD_NAME_H_
#define FABPS_BASE_THREAD_NAME_H_

#include <string>

namespace fabps {

void SetThreadName(const std::string& name);

}  // namespace fabps

#endif  // FABPS_BASE_THREAD_NAME_H_
