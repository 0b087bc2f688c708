#include "pserver/rpc/table_status.h"

#include <algorithm>

namespace fabps::pserver {

rpc::pserver::TableStatus TableStatusToThrift(const protocol::TableStats& t) {
  rpc::pserver::TableStatus ts;
  ts.name = t.name;
  ts.rows = static_cast<int64_t>(t.rows);
  ts.bytes = static_cast<int64_t>(t.bytes);
  ts.bytes_per_row = static_cast<int64_t>(t.bytes_per_row);
  ts.admitted = static_cast<int64_t>(t.admitted);
  ts.evicted_ttl = static_cast<int64_t>(t.evicted_ttl);
  ts.evicted_budget = static_cast<int64_t>(t.evicted_budget);
  ts.not_admitted = static_cast<int64_t>(t.not_admitted);
  ts.over_budget = static_cast<int64_t>(t.over_budget);
  return ts;
}

protocol::TableStats TableStatsFromThrift(const rpc::pserver::TableStatus& t,
                                          uint32_t pserver) {
  auto count = [](int64_t v) {
    return static_cast<uint64_t>(std::max<int64_t>(v, 0));
  };
  protocol::TableStats s;
  s.name = t.name;
  s.pserver = pserver;
  s.rows = count(t.rows);
  s.bytes = count(t.bytes);
  s.bytes_per_row = count(t.bytes_per_row);
  s.admitted = count(t.admitted);
  s.evicted_ttl = count(t.evicted_ttl);
  s.evicted_budget = count(t.evicted_budget);
  s.not_admitted = count(t.not_admitted);
  s.over_budget = count(t.over_budget);
  return s;
}

}  // namespace fabps::pserver
