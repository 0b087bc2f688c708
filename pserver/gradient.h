// GradientRef: what a trainer pushed for one block, as the apply path sees
// it. The bytes usually sit in a registered landing slot that a trainer
// filled by RMA write; nothing in them is trusted (see Shard::Apply).
#ifndef FABPS_PSERVER_GRADIENT_H_
#define FABPS_PSERVER_GRADIENT_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "base/status.h"

namespace fabps::pserver {

enum class GradientFormat : uint32_t {
  // num_elements values of the parameter's type, in block order.
  kDense = 0,
  // The sparse-rows format of sparse_rows.h.
  kSparseRows = 1,
  // No rows at all: a sync-mode trainer's share of a step in which it
  // touched nothing of the block (kSync only; data and bytes are ignored).
  // It counts as that trainer's gradient of the step and adds nothing.
  kEmpty = 2,
};

struct GradientRef {
  uint32_t block = 0;    // global block id from the Layout
  uint64_t step = 0;     // sync mode: the step it belongs to; async: unused
  uint32_t trainer = 0;  // sync mode: sender, in [0, num_trainers)
  GradientFormat format = GradientFormat::kDense;
  // Not owned. Aligned to the element size (dense) or 8 (sparse rows).
  const void* data = nullptr;
  size_t bytes = 0;
};

// Called exactly once per accepted ApplyAsync, on a TBB worker thread, after
// the gradient bytes have been consumed (the slot may be reused from inside
// the callback). Must not block for long and must not call back into the
// Shard's destructor.
using ApplyCallback = std::function<void(const Status&)>;

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_GRADIENT_H_
