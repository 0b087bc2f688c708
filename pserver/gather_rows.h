// The pserver's answer to a rows read (PushKind::kRowsRead): the rows a
// trainer asked for, copied behind its ids in the same landing slot. The
// slot's bytes and their parser are protocol/slot_codec.h's.
//
// A trainer sends all the rows a step touches in one block as one push (one
// update of the block, so Adam's step count goes up once per step, as for a
// dense push); ids are checked by ParseSparseRows (pushes) or by GatherRows
// (reads), each read once.
#ifndef FABPS_PSERVER_GATHER_ROWS_H_
#define FABPS_PSERVER_GATHER_ROWS_H_

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "pserver/protocol_types.h"
#include "pserver/shard.h"

namespace fabps::pserver {

// Copies row ids[i] of the block `view` shows to out + i * R * elem_size,
// for i < count. Each id is read once and must be a parameter row inside
// the block (InvalidArgument naming it otherwise; `out` is then partly
// written). Run it inside Shard::ReadBlockLocked: the rows are a consistent
// snapshot with respect to applies.
Status GatherRows(const BlockView& view, const uint64_t* ids, uint64_t count,
                  void* out);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_GATHER_ROWS_H_
