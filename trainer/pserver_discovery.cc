#include "trainer/pserver_discovery.h"

#include <cstdio>
#include <cstring>
#include <thread>

#include "pserver/wire.h"

namespace fabps::trainer {

PServerDiscovery::PServerDiscovery(std::vector<std::string> addresses)
    : fixed_(std::move(addresses)) {}

PServerDiscovery::PServerDiscovery(std::unique_ptr<coord::Store> store)
    : store_(std::move(store)) {}

Result<std::vector<std::string>> PServerDiscovery::ReadOnce() {
  auto count = store_->Get("ps/count", store_->DefaultDeadline());
  if (!count.ok()) {
    if (count.status().code() == Status::Code::kNotFound)
      return Status::Unavailable("no ps/count in the store yet");
    return count.status();
  }
  uint32_t n = 0;
  try {
    n = static_cast<uint32_t>(std::stoul(count->value));
  } catch (...) {
    n = 0;
  }
  if (n == 0 || n > pserver::wire::kMaxPserverIndex)
    return Status::Corruption("bad ps/count '" + count->value + "'");
  FABPS_ASSIGN_OR_RETURN(auto range,
                         store_->Range("ps/", store_->DefaultDeadline()));
  std::vector<std::string> out(n);
  uint32_t found = 0;
  for (const auto& kv : range.kvs) {
    uint32_t i = 0;
    char tail[8] = {0};
    if (std::sscanf(kv.key.c_str(), "ps/%u/%7s", &i, tail) == 2 &&
        std::strcmp(tail, "addr") == 0 && i < n && out[i].empty()) {
      out[i] = kv.value;
      found++;
    }
  }
  if (found == n) return out;
  return Status::Unavailable(std::to_string(n - found) + " of " +
                             std::to_string(n) +
                             " pservers not published in the store");
}

Result<std::vector<std::string>> PServerDiscovery::Resolve(Deadline deadline) {
  if (!store_) return fixed_;
  for (;;) {
    auto r = ReadOnce();
    if (r.ok() || r.status().code() == Status::Code::kCorruption) return r;
    if (deadline.Expired())
      return r.status().WithContext("finding the pservers in the store");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace fabps::trainer
