// Discovery: how a trainer (or a tool) finds a job's master and pservers in
// the coordination store. The master publishes master/addr
// (master_election.h); pserver i publishes ps/<i>/addr and the job's size
// is ps/count (pserver_claim.h). Both addresses are leased: they vanish
// when their owner dies, and a replacement publishes anew, so callers look
// them up again whenever a connection fails.
//
// Thread safety: safe wherever Store calls are (each call is independent).
#ifndef FABPS_COORD_PROTOCOL_DISCOVERY_H_
#define FABPS_COORD_PROTOCOL_DISCOVERY_H_

#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/store.h"

namespace fabps::coord {

// One look at master/addr. Unavailable when no master has published it (none
// leads right now: the caller retries later), the store's errors otherwise.
Result<std::string> LookupMaster(Store* store, Deadline deadline);

// Waits (on a watch, not a poll) until master/addr exists. TimedOut at
// `deadline`, naming the key and what was last seen.
Result<std::string> WaitForMaster(Store* store, Deadline deadline);

// Waits until ps/count exists and every ps/<i>/addr, i < count, is
// published; returns the addresses by index. Corruption for a ps/count that
// is not a count; at `deadline` TimedOut saying which indices are missing
// (or that ps/count is). Store outages are ridden out until `deadline`.
// Keys under ps/ that are not this protocol's are ignored.
Result<std::vector<std::string>> FindPservers(Store* store, Deadline deadline);

}  // namespace fabps::coord

#endif  // FABPS_COORD_PROTOCOL_DISCOVERY_H_
