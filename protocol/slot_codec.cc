#include "protocol/slot_codec.h"

#include <cstring>
#include <string>

namespace fabps::protocol {
namespace {

using wire::PushKind;

// Rows of `block` that fit a slot of `slot_bytes` behind `header_bytes`.
uint64_t RowsRoom(size_t slot_bytes, size_t header_bytes,
                  const BlockInfo& block, size_t elem_size) {
  if (slot_bytes < header_bytes) return 0;
  const uint64_t per_row = 8 + block.row_elements * elem_size;
  return (slot_bytes - header_bytes) / per_row;
}

std::string KindBlock(uint32_t kind, uint32_t block) {
  return "kind " + std::to_string(kind) + " block " + std::to_string(block);
}

}  // namespace

size_t RowsIdsOffset(PushKind kind) {
  return kind == PushKind::kRowsStep ? kStepHeaderBytes + 8 : kRowsHeaderBytes;
}

void EncodeDenseStepHeader(void* slot, uint32_t block, uint64_t step) {
  StepHeader h;
  h.kind = static_cast<uint32_t>(PushKind::kDenseStep);
  h.block = block;
  h.step = step;
  std::memcpy(slot, &h, sizeof(h));
}

size_t EncodeRowsSlot(void* slot, PushKind kind, uint32_t block, uint64_t step,
                      const uint64_t* ids, uint64_t count) {
  char* at = static_cast<char*>(slot);
  if (kind == PushKind::kRowsStep) {
    StepHeader h;
    h.kind = static_cast<uint32_t>(kind);
    h.block = block;
    h.step = step;
    std::memcpy(at, &h, sizeof(h));
    std::memcpy(at + kStepHeaderBytes, &count, sizeof(count));
  } else {
    RowsHeader h;
    h.kind = static_cast<uint32_t>(kind);
    h.block = block;
    h.count = count;
    std::memcpy(at, &h, sizeof(h));
  }
  const size_t ids_at = RowsIdsOffset(kind);
  if (count > 0) std::memcpy(at + ids_at, ids, count * 8);
  return ids_at + count * 8;
}

Result<uint64_t> ParseDenseStepHeader(const void* slot, size_t slot_bytes,
                                      uint32_t block) {
  const uint32_t want = static_cast<uint32_t>(PushKind::kDenseStep);
  if (slot_bytes < kStepHeaderBytes)
    return Status::Corruption("slot too small for a step header");
  StepHeader h;
  std::memcpy(&h, slot, sizeof(h));  // read once: the peer may still write
  if (h.kind != want || h.block != block) {
    return Status::Corruption("step header says " + KindBlock(h.kind, h.block) +
                              ", the push word " + KindBlock(want, block));
  }
  return h.step;
}

Result<RowsSlot> ParseRowsSlot(const void* slot, size_t slot_bytes,
                               PushKind kind, const BlockInfo& block,
                               size_t elem_size) {
  const bool step = kind == PushKind::kRowsStep;
  const std::string what =
      std::string(step ? "sync rows header" : "rows header") + " for block " +
      std::to_string(block.id) + ": ";
  RowsSlot r;
  r.ids_offset = RowsIdsOffset(kind);
  r.sparse_offset = r.ids_offset - 8;
  if (slot_bytes < r.ids_offset)
    return Status::InvalidArgument(what + "slot too small");
  // Each field read once: the peer may still write.
  uint32_t h_kind = 0, h_block = 0;
  std::memcpy(&h_kind, slot, 4);
  std::memcpy(&h_block, static_cast<const char*>(slot) + 4, 4);
  if (step) {
    std::memcpy(&r.step, static_cast<const char*>(slot) + 8, 8);
    if (h_kind != static_cast<uint32_t>(kind) || h_block != block.id) {
      return Status::Corruption(
          what + "says " + KindBlock(h_kind, h_block) + ", the push word " +
          KindBlock(static_cast<uint32_t>(kind), block.id));
    }
  } else if (h_kind != static_cast<uint32_t>(kind)) {
    return Status::InvalidArgument(what + "kind " + std::to_string(h_kind) +
                                   " but the push word says " +
                                   std::to_string(static_cast<uint32_t>(kind)));
  } else if (h_block != block.id) {
    return Status::InvalidArgument(what + "names block " +
                                   std::to_string(h_block));
  }
  std::memcpy(&r.count, static_cast<const char*>(slot) + r.sparse_offset, 8);
  const uint64_t room = RowsRoom(slot_bytes, r.ids_offset, block, elem_size);
  if (step ? r.count > room : r.count == 0 || r.count > room) {
    return Status::InvalidArgument(
        what + "row count " + std::to_string(r.count) +
        (step ? " above " + std::to_string(room)
              : " outside [1, " + std::to_string(room) + "]") +
        " (what the slot holds)");
  }
  r.values_offset = r.ids_offset + r.count * 8;
  return r;
}

}  // namespace fabps::protocol
