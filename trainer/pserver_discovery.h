// PServerDiscovery: where the pservers of a job serve.
//
// Either a fixed list ("host:port" of pserver 0, 1, ...), or the job's
// coordination store: ps/count gives their number and ps/<i>/addr pserver
// i's address (published by fabps-pserver --store with its claim on the
// index). Resolve waits until every index is published or the deadline
// passes; each call reads the store again, so a pserver restarted elsewhere
// is found.
//
// Thread safety: one thread at a time (PServerClient serializes).
#ifndef FABPS_TRAINER_PSERVER_DISCOVERY_H_
#define FABPS_TRAINER_PSERVER_DISCOVERY_H_

#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/store.h"

namespace fabps::trainer {

class PServerDiscovery {
 public:
  // A fixed list; Resolve returns it.
  explicit PServerDiscovery(std::vector<std::string> addresses);
  // Looks the pservers up in `store` (not null).
  explicit PServerDiscovery(std::unique_ptr<coord::Store> store);

  // The addresses, pserver 0 first. Unavailable (with what is missing) or
  // the store's error when not all are known by `deadline`; Corruption for
  // a bad ps/count.
  Result<std::vector<std::string>> Resolve(Deadline deadline);
  // True when addresses may change between calls (a store).
  bool dynamic() const { return store_ != nullptr; }
  // The store, or null with a fixed list.
  coord::Store* store() const { return store_.get(); }

 private:
  // One look at the store.
  Result<std::vector<std::string>> ReadOnce();

  std::vector<std::string> fixed_;
  std::unique_ptr<coord::Store> store_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_PSERVER_DISCOVERY_H_
