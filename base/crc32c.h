// CRC32C (Castagnoli), the checksum of recordio chunks, checkpoint blocks and
// headers. Uses the SSE4.2 crc32 instruction when the CPU has it, a table
// otherwise; both give the same values (tests check the RFC 3720 vectors).
#ifndef FABPS_BASE_CRC32C_H_
#define FABPS_BASE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace fabps::crc32c {

// Extends `crc` (the CRC32C of some earlier bytes, 0 for none) with `n` bytes.
uint32_t Extend(uint32_t crc, const void* data, size_t n);

inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

}  // namespace fabps::crc32c

#endif  // FABPS_BASE_CRC32C_H_
