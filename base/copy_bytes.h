// CopyBytes: memcpy without a slow case of this project's machines.
//
// glibc's memcpy copies from about 2 KiB up with `rep movsb`. On the AMD
// EPYC virtual machines this project runs on (fsrm, erms), `rep movsb` moves
// 1.6-2.8 GB/s instead of 10-32 when the destination's offset within its
// 64-byte line is 1 to 31 bytes above the source's
// (docs/decisions/012-copybytes-avoids-slow-rep-movsb-pairs.md).
// Whether it does is a matter of where two buffers happen to start, so a
// pull into a caller's buffer can be five times slower than the same pull
// into another. CopyBytes copies such a pair with 16-byte loads and aligned
// stores instead, and hands every other copy to memcpy.
//
// Same contract as memcpy: the ranges must not overlap; n may be 0.
#ifndef FABPS_BASE_COPY_BYTES_H_
#define FABPS_BASE_COPY_BYTES_H_

#include <cstddef>

namespace fabps {

void CopyBytes(void* dst, const void* src, size_t n);

// Whether CopyBytes would avoid memcpy for this pair (for tests).
bool CopyBytesAvoidsMemcpy(const void* dst, const void* src, size_t n);

}  // namespace fabps

#endif  // FABPS_BASE_COPY_BYTES_H_
