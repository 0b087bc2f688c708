// The inner loops of the update rules (see update_rule.h for the math).
//
// Kernels are element-wise over [0, n), so a caller may split a block into
// ranges and run them on different threads. They keep no state and take no
// locks: the caller serializes updates of one block. Pointers must not alias
// each other; unused state pointers may be null.
//
// Instantiated for float and double in update_kernels.cc, which is compiled
// with -O3 -fno-math-errno so that the loops (sqrt included) vectorize.
#ifndef FABPS_PSERVER_UPDATE_KERNELS_H_
#define FABPS_PSERVER_UPDATE_KERNELS_H_

#include <cstddef>

#include "pserver/update_rule.h"

namespace fabps::pserver {

// Applies one update with scalars `s` to w[0..n) from gradient g[0..n).
// state0/state1 are the rule's state arrays (StateSlots(kind) of them).
template <typename T>
void ApplyRule(RuleKind kind, const StepScalars& s, T* w, T* state0, T* state1,
               const T* g, size_t n);

// Sum of squares of clamp(g[i], -clip_value, clip_value) (no clamp when
// clip_value is 0), accumulated in double: the input of clip by norm.
template <typename T>
double ClampedSumSquares(const T* g, size_t n, double clip_value);

// out[i] += in[i]: summing gradients (sync mode, duplicate sparse rows).
template <typename T>
void AddInto(T* out, const T* in, size_t n);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_UPDATE_KERNELS_H_
