// The local backend of coord::Store: one directory, shared by the processes
// of one job on one machine.
//
// Files in the directory:
//   LOCK      empty; flock(LOCK_EX) on it serializes every operation of
//             every process (held for one operation, never across calls).
//   SNAPSHOT  the whole state at some revision and its log generation G
//             (written to SNAPSHOT.tmp, fsynced, renamed: atomic).
//   log.G     records appended since that snapshot, each with its length and
//             CRC32C; a write is one append + fdatasync before it returns.
//
// Each process keeps the state in memory and, under the lock, first catches
// up with the records other processes appended (and with a newer SNAPSHOT
// when one compacted), then checks lease expiries (wall clock, stored in the
// log), then runs its operation and appends its record. When log.G passes
// StoreOptions::local_compact_log_bytes the writer writes SNAPSHOT with
// generation G+1 and starts log.G+1; log.G-1 is removed then (a process that
// lags two compactions reloads the snapshot and fails its watches).
//
// A background thread per process polls (StoreOptions::poll_interval_ms) for
// records of other processes, feeding watches, and removes expired leases
// (whoever notices first, under the lock). A torn record at the end of the
// log (a writer killed mid-append, never acknowledged) is cut off; any other
// bad byte is kCorruption, returned by Open and then by every call.
#ifndef FABPS_COORD_LOCAL_LOCAL_STORE_H_
#define FABPS_COORD_LOCAL_LOCAL_STORE_H_

#include <memory>

#include "coord/store.h"

namespace fabps::coord::local {

// `dir` is the part of the spec after "local:".
Result<std::unique_ptr<Store>> OpenLocalStore(const std::string& dir,
                                              const StoreOptions& options);

}  // namespace fabps::coord::local

#endif  // FABPS_COORD_LOCAL_LOCAL_STORE_H_
