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
  auto r = internal::WatchUntil<std::string>(
      store, keys::kMasterAddr, deadline,
      [](const std::vector<KeyValue>& kvs,
         Status* why_not) -> std::optional<Result<std::string>> {
        for (const KeyValue& kv : kvs)
          if (kv.key == keys::kMasterAddr) return Result<std::string>(kv.value);
        *why_not = Status::NotFound("master/addr absent");
        return std::nullopt;
      });
  if (r.status().code() == Status::Code::kTimedOut) {
    return Status::TimedOut(
        "no master published master/addr by the deadline (last: " +
        r.status().message() + ")");
  }
  return r;
}

Result<std::vector<std::string>> FindPservers(Store* store, Deadline deadline) {
  using Addresses = std::vector<std::string>;
  // One read sees ps/count and every address at one revision.
  auto r = internal::WatchUntil<Addresses>(
      store, keys::kPsPrefix, deadline,
      [](const std::vector<KeyValue>& kvs,
         Status* why_not) -> std::optional<Result<Addresses>> {
        const KeyValue* count_kv = nullptr;
        for (const KeyValue& kv : kvs)
          if (kv.key == keys::kPsCount) count_kv = &kv;
        if (count_kv == nullptr) {
          *why_not = Status::Unavailable("no ps/count in the store yet");
          return std::nullopt;
        }
        Result<uint32_t> n = keys::ParsePsCount(count_kv->value);
        if (!n.ok()) return Result<Addresses>(n.status());
        Addresses addrs(*n);
        uint32_t found = 0;
        for (const KeyValue& kv : kvs) {
          auto k = keys::ParsePsKey(kv.key);
          if (!k.ok() || k->leaf != keys::PsLeaf::kAddr || k->index >= *n ||
              kv.value.empty())
            continue;
          addrs[k->index] = kv.value;
          found++;
        }
        if (found == *n) return Result<Addresses>(std::move(addrs));
        *why_not = Status::Unavailable(
            std::to_string(*n - found) + " of " + std::to_string(*n) +
            " pservers have not published ps/<i>/addr (i = " +
            ListIndices(addrs) + ")");
        return std::nullopt;
      });
  if (r.status().code() == Status::Code::kTimedOut) {
    return r.status().WithContext(
        "finding the pservers in the store by the deadline");
  }
  return r;
}

}  // namespace fabps::coord
