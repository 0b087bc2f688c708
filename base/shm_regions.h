// Leftovers of libfabric's shm provider.
//
// The shm provider (libfabric 1.17) names the shared-memory region of each
// endpoint "/dev/shm/<pid>:<domain>:<endpoint>" and unlinks it when the
// endpoint closes. A process killed with SIGKILL leaves its regions behind:
// they keep their memory (16 MiB each) and make a later process that gets the
// same pid fail fi_enable with EBUSY. Whoever reaps such a process, and every
// process before it opens its first shm endpoint, removes them.
#ifndef FABPS_BASE_SHM_REGIONS_H_
#define FABPS_BASE_SHM_REGIONS_H_

#include <sys/types.h>

namespace fabps {

// Removes the regions named after `pid` ("<pid>:<digits>:<digits>" in
// /dev/shm). Only for a pid whose process is gone (reaped), or for the
// caller's own pid before it opens any shm endpoint. Returns how many were
// removed (0 when /dev/shm does not exist).
int RemoveShmRegionsOf(pid_t pid);

}  // namespace fabps

#endif  // FABPS_BASE_SHM_REGIONS_H_
