#include "base/copy_bytes.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace fabps {
namespace {

// glibc 2.36 copies with `rep movsb` from x86_rep_movsb_threshold (0x840
// bytes here) up; below that its vector code has no such case.
constexpr size_t kRepMovsbFrom = 2048;

}  // namespace

bool CopyBytesAvoidsMemcpy(const void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  // Offsets within a 64-byte line: slow when the destination's is 1 to 31
  // above the source's
  // (docs/decisions/012-copybytes-avoids-slow-rep-movsb-pairs.md).
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst) & 63;
  const uintptr_t s = reinterpret_cast<uintptr_t>(src) & 63;
  return n >= kRepMovsbFrom && d > s && d - s < 32;
#else
  (void)dst;
  (void)src;
  (void)n;
  return false;
#endif
}

void CopyBytes(void* dst, const void* src, size_t n) {
  if (!CopyBytesAvoidsMemcpy(dst, src, n)) {
    std::memcpy(dst, src, n);
    return;
  }
#if defined(__x86_64__)
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  // Up to the destination's next 64-byte boundary: then every store is
  // aligned and the loads are not.
  const size_t head = (64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  for (; n >= 64; n -= 64, d += 64, s += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_store_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_store_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_store_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_store_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  std::memcpy(d, s, n);  // the tail, under 64 bytes
#endif
}

}  // namespace fabps
