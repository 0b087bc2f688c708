// PServerDiscovery: where the pservers of a job serve.
//
// Either a fixed list ("host:port" of pserver 0, 1, ...), or the job's
// coordination store, read with the coordination protocol's discovery
// (coord/protocol/discovery.h: ps/count and every ps/<i>/addr, published by
// fabps-pserver --store with its claim on the index). Each Resolve reads the
// store again, so a pserver restarted elsewhere is found.
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

  // The addresses, pserver 0 first. With a store, waits until every index
  // is published: TimedOut (saying what is missing) at `deadline`,
  // Corruption for a bad ps/count.
  Result<std::vector<std::string>> Resolve(Deadline deadline);
  // True when addresses may change between calls (a store).
  bool dynamic() const { return store_ != nullptr; }
  // The store, or null with a fixed list.
  coord::Store* store() const { return store_.get(); }

 private:
  std::vector<std::string> fixed_;
  std::unique_ptr<coord::Store> store_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_PSERVER_DISCOVERY_H_
