#include "pserver/rows_slot.h"

#include <cstring>
#include <string>

namespace fabps::pserver {
namespace {

// Rows of `block` that fit a slot of `slot_bytes` behind `header_bytes`.
uint64_t RowsRoom(size_t slot_bytes, size_t header_bytes,
                  const BlockInfo& block, size_t elem_size) {
  if (slot_bytes < header_bytes) return 0;
  const uint64_t per_row = 8 + block.row_elements * elem_size;
  return (slot_bytes - header_bytes) / per_row;
}

}  // namespace

Result<wire::RowsHeader> ParseRowsHeader(const void* slot, size_t slot_bytes,
                                         wire::PushKind kind,
                                         const BlockInfo& block,
                                         size_t elem_size) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("rows header for block " +
                                   std::to_string(block.id) + ": " + why);
  };
  if (slot_bytes < wire::kRowsHeaderBytes) return bad("slot too small");
  wire::RowsHeader h;
  std::memcpy(&h, slot, sizeof(h));  // read once: the peer may still write
  if (h.kind != static_cast<uint32_t>(kind)) {
    return bad("kind " + std::to_string(h.kind) + " but the push word says " +
               std::to_string(static_cast<uint32_t>(kind)));
  }
  if (h.block != block.id) {
    return bad("names block " + std::to_string(h.block));
  }
  const uint64_t room =
      RowsRoom(slot_bytes, wire::kRowsHeaderBytes, block, elem_size);
  if (h.count == 0 || h.count > room) {
    return bad("row count " + std::to_string(h.count) + " outside [1, " +
               std::to_string(room) + "] (what the slot holds)");
  }
  return h;
}

Result<StepRows> ParseStepRowsHeader(const void* slot, size_t slot_bytes,
                                     const BlockInfo& block, size_t elem_size) {
  const std::string what =
      "sync rows header for block " + std::to_string(block.id) + ": ";
  if (slot_bytes < wire::kStepRowsIdsOffset)
    return Status::InvalidArgument(what + "slot too small");
  wire::StepHeader h;
  std::memcpy(&h, slot, sizeof(h));  // read once: the peer may still write
  if (h.kind != static_cast<uint32_t>(wire::PushKind::kRowsStep) ||
      h.block != block.id) {
    return Status::Corruption(what + "says kind " + std::to_string(h.kind) +
                              " block " + std::to_string(h.block) +
                              ", the push word kind 169 block " +
                              std::to_string(block.id));
  }
  StepRows r;
  r.step = h.step;
  std::memcpy(&r.count, static_cast<const char*>(slot) + wire::kStepHeaderBytes,
              sizeof(r.count));
  const uint64_t room =
      RowsRoom(slot_bytes, wire::kStepRowsIdsOffset, block, elem_size);
  if (r.count > room) {
    return Status::InvalidArgument(
        what + "row count " + std::to_string(r.count) + " above " +
        std::to_string(room) + " (what the slot holds)");
  }
  return r;
}

Status GatherRows(const BlockView& view, const uint64_t* ids, uint64_t count,
                  void* out) {
  const BlockInfo& b = *view.info;
  const size_t row_bytes = b.row_elements * DTypeSize(view.dtype);
  const char* values = static_cast<const char*>(view.values);
  char* dst = static_cast<char*>(out);
  for (uint64_t i = 0; i < count; ++i) {
    // Copied out once: the slot is remote-writable memory.
    uint64_t id;
    std::memcpy(&id, ids + i, sizeof(id));
    const uint64_t local = id - b.first_row;  // wraps when below the block
    if (local >= b.num_rows) {
      return Status::InvalidArgument(
          "rows read for block " + std::to_string(b.id) + ": row id " +
          std::to_string(id) + " outside rows [" + std::to_string(b.first_row) +
          ", " + std::to_string(b.first_row + b.num_rows) + ")");
    }
    std::memcpy(dst + i * row_bytes, values + local * row_bytes, row_bytes);
  }
  return Status::OK();
}

}  // namespace fabps::pserver
