// A hashed table's counters on the control plane: protocol::TableStats to
// and from the TableStatus of a pserver's status (thrift/pserver.thrift).
#ifndef FABPS_PSERVER_RPC_TABLE_STATUS_H_
#define FABPS_PSERVER_RPC_TABLE_STATUS_H_

#include "protocol/hashed_table.h"
#include "thrift_gen/pserver/pserver_types.h"

namespace fabps::pserver {

rpc::pserver::TableStatus TableStatusToThrift(const protocol::TableStats& t);
// The counters of a status from pserver `pserver`; negative counts (from a
// peer) read as 0.
protocol::TableStats TableStatsFromThrift(const rpc::pserver::TableStatus& t,
                                          uint32_t pserver);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_RPC_TABLE_STATUS_H_
