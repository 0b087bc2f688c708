// Rows in a landing slot: what a trainer's rows push (PushKind::kRows) or
// rows read (PushKind::kRowsRead) puts into one of its landing slots, and
// the pserver's checks of it. Byte layout: wire::RowsHeader in wire.h and
// docs/formats/wire.md.
//
// Only parameters of rank >= 2 take rows (a rank-1 parameter's "rows" are
// single elements: use dense pushes). Their blocks are whole rows (layout.h),
// so every row of a block fits one slot: a pserver sizes its slots to
// RowsSlotBytesForBlock of its largest such block, and a trainer sends all
// the rows a step touches in one block as one push (one update of the block,
// so Adam's step count goes up once per step, as for a dense push).
//
// Everything in a slot comes from a peer: ParseRowsHeader checks the header
// against the push word and the slot; ids are checked by ParseSparseRows
// (pushes) or by GatherRows (reads), each read once.
#ifndef FABPS_PSERVER_ROWS_SLOT_H_
#define FABPS_PSERVER_ROWS_SLOT_H_

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "pserver/layout.h"
#include "pserver/shard.h"
#include "pserver/wire.h"

namespace fabps::pserver {

// True when the parameter's blocks accept rows pushes and reads.
inline bool TakesRows(const ParamSpec& p) { return p.shape.size() >= 2; }

// The slot bytes a push or read of every row of `block` once takes.
inline size_t RowsSlotBytesForBlock(const BlockInfo& block, size_t elem_size) {
  return wire::RowsSlotBytes(block.num_rows, block.row_elements, elem_size);
}

// Reads and checks the header at the start of a slot of `slot_bytes` bytes
// that a push word of kind `kind` (kRows or kRowsRead) for `block` named:
// the header's kind and block equal the word's, 1 <= count, and the rows
// fit the slot. InvalidArgument saying which check failed.
Result<wire::RowsHeader> ParseRowsHeader(const void* slot, size_t slot_bytes,
                                         wire::PushKind kind,
                                         const BlockInfo& block,
                                         size_t elem_size);

// What a sync step's rows push (PushKind::kRowsStep) says in its slot.
struct StepRows {
  uint64_t step = 0;
  uint64_t count = 0;  // 0: the trainer touched no row of the block
};

// Reads and checks the StepHeader and row count at the start of a slot
// that a kRowsStep push word for `block` named: kind and block equal the
// word's, and the rows fit the slot. A count of 0 is valid here (and only
// here): a trainer's share of a sync step in which it touched no row of the
// block, which the step needs from every trainer (docs/sync.md). Corruption
// when kind or block differ (as for kDenseStep), InvalidArgument for the
// count. The ids are checked later, by ParseSparseRows.
Result<StepRows> ParseStepRowsHeader(const void* slot, size_t slot_bytes,
                                     const BlockInfo& block, size_t elem_size);

// Copies row ids[i] of the block `view` shows to out + i * R * elem_size,
// for i < count. Each id is read once and must be a parameter row inside
// the block (InvalidArgument naming it otherwise; `out` is then partly
// written). Run it inside Shard::ReadBlockLocked: the rows are a consistent
// snapshot with respect to applies.
Status GatherRows(const BlockView& view, const uint64_t* ids, uint64_t count,
                  void* out);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_ROWS_SLOT_H_
