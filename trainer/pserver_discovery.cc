#include "trainer/pserver_discovery.h"

#include <utility>

#include "coord/protocol/discovery.h"

namespace fabps::trainer {

PServerDiscovery::PServerDiscovery(std::vector<std::string> addresses)
    : fixed_(std::move(addresses)) {}

PServerDiscovery::PServerDiscovery(std::unique_ptr<coord::Store> store)
    : store_(std::move(store)) {}

Result<std::vector<std::string>> PServerDiscovery::Resolve(Deadline deadline) {
  if (!store_) return fixed_;
  auto r = coord::FindPservers(store_.get(), deadline);
  if (!r.ok())
    return r.status().WithContext("finding the pservers in the store");
  return r;
}

}  // namespace fabps::trainer
