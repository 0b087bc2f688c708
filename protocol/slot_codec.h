// What a trainer's push puts into one of its landing slots on a pserver, for
// every PushKind (protocol/wire.h), with the one encoder the trainer writes
// with and the one parser the pserver reads with. Bytes are little-endian;
// docs/formats/wire.md draws them.
//
//   kDense      the gradient block, nothing else
//   kDenseStep  StepHeader (u32 kind, u32 block, u64 step), then the block
//   kRows       RowsHeader (u32 kind, u32 block, u64 count), u64 ids[count],
//               then count rows of R values (the trainer's gradients); the
//               bytes from offset 8 are the sparse-rows format
//               (protocol/sparse_rows.h)
//   kRowsRead   RowsHeader, u64 ids[count]; the pserver writes the rows
//               behind the ids (at RowsValuesOffset) before its credit
//   kRowsStep   StepHeader, u64 count, u64 ids[count], count rows; the bytes
//               from offset 16 are the sparse-rows format, except that count
//               may be 0 (a trainer's share of a sync step that touched no
//               row of the block, which the step needs from every trainer)
//
// Ids are parameter row indices (not block-relative). A block's rows all fit
// one slot: a pserver sizes its slots to RowsSlotBytesForBlock of its largest
// block that takes rows (plus kStepHeaderBytes in sync mode).
//
// Everything in a slot comes from a peer that may still be writing to it:
// the parsers read each header field once, check it against the push word
// and the slot's size, and never read outside the slot. Ids are checked
// later, once, by whoever reads them (ParseSparseRows for pushes, the
// pserver's gather for reads).
//
// Thread safety: pure functions.
#ifndef FABPS_PROTOCOL_SLOT_CODEC_H_
#define FABPS_PROTOCOL_SLOT_CODEC_H_

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "protocol/layout.h"
#include "protocol/wire.h"

namespace fabps::protocol {

struct RowsHeader {
  uint32_t kind = 0;   // the push word's PushKind again (kRows, kRowsRead)
  uint32_t block = 0;  // the push word's block again
  uint64_t count = 0;  // rows that follow
};
static_assert(sizeof(RowsHeader) == 16);
constexpr size_t kRowsHeaderBytes = sizeof(RowsHeader);

struct StepHeader {
  uint32_t kind = 0;   // kDenseStep or kRowsStep again
  uint32_t block = 0;  // the push word's block again
  uint64_t step = 0;   // the sync step the gradient belongs to
};
static_assert(sizeof(StepHeader) == 16);
constexpr size_t kStepHeaderBytes = sizeof(StepHeader);

// The offsets of a rows slot of `kind` (kRows, kRowsRead or kRowsStep):
// where its ids start, where the values of `count` rows start, and the
// bytes of the whole slot with rows of `row_bytes` (R * element size).
size_t RowsIdsOffset(wire::PushKind kind);
inline size_t RowsValuesOffset(wire::PushKind kind, uint64_t count) {
  return RowsIdsOffset(kind) + count * 8;
}
inline size_t RowsSlotBytes(wire::PushKind kind, uint64_t count,
                            size_t row_bytes) {
  return RowsValuesOffset(kind, count) + count * row_bytes;
}
// The slot bytes a rows push or read of every row of `block` once takes.
inline size_t RowsSlotBytesForBlock(const BlockInfo& block, size_t elem_size) {
  return RowsSlotBytes(wire::PushKind::kRows, block.num_rows,
                       block.row_elements * elem_size);
}

// Encoders (trainer side). `slot` points at the slot's first byte (or a
// staging copy of it) with room for what is written.
//
// kDenseStep: writes the step header; the block goes at kStepHeaderBytes.
void EncodeDenseStepHeader(void* slot, uint32_t block, uint64_t step);
// kRows, kRowsRead, kRowsStep: writes the header (with `step` for
// kRowsStep; ignored otherwise) and the `count` ids; returns
// RowsValuesOffset(kind, count), where the rows go.
size_t EncodeRowsSlot(void* slot, wire::PushKind kind, uint32_t block,
                      uint64_t step, const uint64_t* ids, uint64_t count);

// Parsers (pserver side), for a slot of `slot_bytes` bytes that a push word
// of kind `kind` naming `block` announced.
//
// kDenseStep: the step; Corruption when the header's kind or block is not
// the word's, or the slot cannot hold a header.
Result<uint64_t> ParseDenseStepHeader(const void* slot, size_t slot_bytes,
                                      uint32_t block);

// A checked rows slot.
struct RowsSlot {
  uint64_t step = 0;         // kRowsStep only
  uint64_t count = 0;        // rows in the slot
  size_t sparse_offset = 0;  // kRows, kRowsStep: the sparse-rows bytes
  size_t ids_offset = 0;
  size_t values_offset = 0;
  // kRows, kRowsStep: bytes of the sparse-rows format at sparse_offset.
  size_t sparse_bytes(size_t row_bytes) const {
    return 8 + count * (8 + row_bytes);
  }
};
// kRows, kRowsRead, kRowsStep: checks the header against the word (kind and
// block; InvalidArgument for kRows and kRowsRead, Corruption for kRowsStep,
// as for kDenseStep) and that 1 <= count (0 allowed for kRowsStep) and the
// rows fit the slot (InvalidArgument); says which check failed.
Result<RowsSlot> ParseRowsSlot(const void* slot, size_t slot_bytes,
                               wire::PushKind kind, const BlockInfo& block,
                               size_t elem_size);

}  // namespace fabps::protocol

#endif  // FABPS_PROTOCOL_SLOT_CODEC_H_
