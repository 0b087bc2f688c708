#include "pserver/update_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fabps::pserver {
namespace {

// kPre: clip and/or scale the gradient; kDecay: add weight_decay * w. Both
// are template flags so that the common case (plain SGD) is the bare
// w -= lr * g loop.
template <typename T, RuleKind K, bool kPre, bool kDecay>
inline __attribute__((always_inline)) void Loop(
    const StepScalars& s, T* __restrict w, T* __restrict a, T* __restrict b,
    const T* __restrict g, size_t n) {
  const T lr = static_cast<T>(s.lr);
  const T clip = s.clip_value > 0 ? static_cast<T>(s.clip_value)
                                  : std::numeric_limits<T>::infinity();
  const T scale = static_cast<T>(s.grad_scale);
  const T wd = static_cast<T>(s.weight_decay);
  const T mu = static_cast<T>(s.momentum);
  const T b1 = static_cast<T>(s.beta1), b2 = static_cast<T>(s.beta2);
  const T one_b1 = static_cast<T>(1.0 - s.beta1);
  const T one_b2 = static_cast<T>(1.0 - s.beta2);
  const T ib1 = static_cast<T>(s.inv_bias1), ib2 = static_cast<T>(s.inv_bias2);
  const T eps = static_cast<T>(s.epsilon);
  for (size_t i = 0; i < n; ++i) {
    T gi = g[i];
    if constexpr (kPre) gi = std::min(std::max(gi, -clip), clip) * scale;
    if constexpr (kDecay) gi += wd * w[i];
    if constexpr (K == RuleKind::kSgd) {
      w[i] -= lr * gi;
    } else if constexpr (K == RuleKind::kMomentum) {
      T v = mu * a[i] + gi;
      a[i] = v;
      w[i] -= lr * v;
    } else if constexpr (K == RuleKind::kNesterov) {
      T v = mu * a[i] + gi;
      a[i] = v;
      w[i] -= lr * (gi + mu * v);
    } else if constexpr (K == RuleKind::kAdam) {
      T m = b1 * a[i] + one_b1 * gi;
      T v = b2 * b[i] + one_b2 * gi * gi;
      a[i] = m;
      b[i] = v;
      w[i] -= lr * (m * ib1) / (std::sqrt(v * ib2) + eps);
    } else if constexpr (K == RuleKind::kAdaGrad) {
      T acc = a[i] + gi * gi;
      a[i] = acc;
      w[i] -= lr * gi / (std::sqrt(acc) + eps);
    }
  }
}

template <typename T, RuleKind K>
inline __attribute__((always_inline)) void Select(const StepScalars& s, T* w,
                                                  T* a, T* b, const T* g,
                                                  size_t n) {
  const bool pre = s.clip_value > 0 || s.grad_scale != 1.0;
  const bool decay = s.weight_decay != 0;
  if (pre) {
    if (decay) {
      Loop<T, K, true, true>(s, w, a, b, g, n);
    } else {
      Loop<T, K, true, false>(s, w, a, b, g, n);
    }
  } else if (decay) {
    Loop<T, K, false, true>(s, w, a, b, g, n);
  } else {
    Loop<T, K, false, false>(s, w, a, b, g, n);
  }
}

// The same loops compiled for AVX2 (no FMA: every operation rounds as in
// the baseline build, so both paths give bit-identical results; only the
// vector width differs). Sqrt and division bound Adam and AdaGrad on one
// thread, and AVX2 doubles their width.
template <typename T, RuleKind K>
__attribute__((target("avx2"))) void SelectAvx2(const StepScalars& s, T* w,
                                                T* a, T* b, const T* g,
                                                size_t n) {
  Select<T, K>(s, w, a, b, g, n);
}

template <typename T, RuleKind K>
void Dispatch(const StepScalars& s, T* w, T* a, T* b, const T* g, size_t n) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    SelectAvx2<T, K>(s, w, a, b, g, n);
  } else {
    Select<T, K>(s, w, a, b, g, n);
  }
}

}  // namespace

template <typename T>
void ApplyRule(RuleKind kind, const StepScalars& s, T* w, T* state0, T* state1,
               const T* g, size_t n) {
  switch (kind) {
    case RuleKind::kSgd:
      return Dispatch<T, RuleKind::kSgd>(s, w, state0, state1, g, n);
    case RuleKind::kMomentum:
      return Dispatch<T, RuleKind::kMomentum>(s, w, state0, state1, g, n);
    case RuleKind::kNesterov:
      return Dispatch<T, RuleKind::kNesterov>(s, w, state0, state1, g, n);
    case RuleKind::kAdam:
      return Dispatch<T, RuleKind::kAdam>(s, w, state0, state1, g, n);
    case RuleKind::kAdaGrad:
      return Dispatch<T, RuleKind::kAdaGrad>(s, w, state0, state1, g, n);
  }
}

template <typename T>
double ClampedSumSquares(const T* g, size_t n, double clip_value) {
  const T clip = clip_value > 0 ? static_cast<T>(clip_value)
                                : std::numeric_limits<T>::infinity();
  // Eight independent partial sums in a fixed pattern: a single running sum
  // is one long dependency chain (about 4 cycles per element) and cannot be
  // vectorized without reordering; eight lanes vectorize and the result is
  // still the same on every run.
  constexpr size_t kLanes = 8;
  double acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) {
      double x = std::min(std::max(g[i + j], -clip), clip);
      acc[j] += x * x;
    }
  }
  for (; i < n; ++i) {
    double x = std::min(std::max(g[i], -clip), clip);
    acc[0] += x * x;
  }
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

template <typename T>
void AddInto(T* __restrict out, const T* __restrict in, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] += in[i];
}

template void ApplyRule<float>(RuleKind, const StepScalars&, float*, float*,
                               float*, const float*, size_t);
template void ApplyRule<double>(RuleKind, const StepScalars&, double*, double*,
                                double*, const double*, size_t);
template double ClampedSumSquares<float>(const float*, size_t, double);
template double ClampedSumSquares<double>(const double*, size_t, double);
template void AddInto<float>(float*, const float*, size_t);
template void AddInto<double>(double*, const double*, size_t);

}  // namespace fabps::pserver
