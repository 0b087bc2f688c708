#include "coord/protocol/discovery.h"

#include "coord/protocol/change_waiter.h"
#include "coord/protocol/job_keys.h"

namespace fabps::coord {
namespace {

// "1, 4, 7" (at most 10, then "...").
std::string ListIndices(const std::vector<std::string>& addrs) {
  std::string out;
  int listed = 0;
  for (size_t i = 0; i < addrs.size(); i++) {
    if (!addrs[i].empty()) continue;
    if (listed == 10) return out + ", ...";
    out += (listed++ ? ", " : "") + std::to_string(i);
  }
  return out;
}

}  // namespace

Result<std::string> LookupMaster(Store* store, Deadline deadline) {
  auto kv = store->Get(keys::kMasterAddr, deadline);
  if (kv.ok()) return kv->value;
  if (kv.status().code() == Status::Code::kNotFound)
    return Status::Unavailable("no master has published master/addr yet");
  return kv.status().WithContext("looking up master/addr");
}

Result<std::string> WaitForMaster(Store* store, Deadline deadline) {
  internal::ChangeWaiter waiter(store, keys::kMasterAddr);
  Status last;
  for (;;) {
    auto r = store->Range(keys::kMasterAddr,
                          internal::Sooner(deadline, store->DefaultDeadline()));
    int64_t seen = 0;
    if (r.ok()) {
      for (const KeyValue& kv : r->kvs)
        if (kv.key == keys::kMasterAddr) return kv.value;
      seen = r->revision;
      last = Status::NotFound("master/addr absent");
    } else {
      last = r.status();
    }
    if (!waiter.Wait(seen, deadline))
      return Status::TimedOut(
          "no master published master/addr by the "
          "deadline (last: " +
          last.ToString() + ")");
  }
}

Result<std::vector<std::string>> FindPservers(Store* store, Deadline deadline) {
  internal::ChangeWaiter waiter(store, keys::kPsPrefix);
  Status last;
  for (;;) {
    // One read sees ps/count and every address at one revision.
    auto r = store->Range(keys::kPsPrefix,
                          internal::Sooner(deadline, store->DefaultDeadline()));
    int64_t seen = 0;
    if (r.ok()) {
      seen = r->revision;
      const KeyValue* count_kv = nullptr;
      for (const KeyValue& kv : r->kvs)
        if (kv.key == keys::kPsCount) count_kv = &kv;
      if (count_kv == nullptr) {
        last = Status::Unavailable("no ps/count in the store yet");
      } else {
        FABPS_ASSIGN_OR_RETURN(uint32_t n, keys::ParsePsCount(count_kv->value));
        std::vector<std::string> addrs(n);
        uint32_t found = 0;
        for (const KeyValue& kv : r->kvs) {
          auto k = keys::ParsePsKey(kv.key);
          if (!k.ok() || k->leaf != keys::PsLeaf::kAddr || k->index >= n ||
              kv.value.empty())
            continue;
          addrs[k->index] = kv.value;
          found++;
        }
        if (found == n) return addrs;
        last = Status::Unavailable(
            std::to_string(n - found) + " of " + std::to_string(n) +
            " pservers have not published ps/<i>/addr (i = " +
            ListIndices(addrs) + ")");
      }
    } else {
      last = r.status();
    }
    if (!waiter.Wait(seen, deadline))
      return Status::TimedOut(last.message())
          .WithContext("finding the pservers in the store by the deadline");
  }
}

}  // namespace fabps::coord
