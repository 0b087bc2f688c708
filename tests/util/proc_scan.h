// Test helper: the processes of this machine as /proc shows them. A process
// that exits while it is being read is simply not there (a read of its
// files failing is not an error).
#ifndef FABPS_TESTS_UTIL_PROC_SCAN_H_
#define FABPS_TESTS_UTIL_PROC_SCAN_H_

#include <string>
#include <vector>

namespace fabps::testing {

// PIDs of live (not zombie) processes whose argv[0] ends with `program`
// ("" : any) and whose command line mentions `needle`.
std::vector<int> LiveProcesses(const std::string& program,
                               const std::string& needle);

// Whether `pid` exists and is not a zombie.
bool ProcessAlive(int pid);

// The names of the threads of `pid` (/proc/<pid>/task/*/comm), one entry per
// thread; empty when the process is gone.
std::vector<std::string> ThreadNames(int pid);

// User plus system CPU seconds so far of the threads of `pid` named `name`.
double ThreadCpuSeconds(int pid, const std::string& name);

// Whether `pid` has threads and every one of them is stopped (state T or t).
// kill(SIGSTOP) returns before the stop lands: a thread running on another
// core stops when the kernel next looks at it, and may answer a peer in the
// meantime. Wait on this before relying on a process being frozen.
bool AllThreadsStopped(int pid);

}  // namespace fabps::testing

#endif  // FABPS_TESTS_UTIL_PROC_SCAN_H_
