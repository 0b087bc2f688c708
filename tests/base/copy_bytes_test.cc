// CopyBytes copies exactly what memcpy would, for every relative alignment
// of the two buffers (including the ones it copies itself) and for sizes
// around its thresholds and its 64-byte steps.
#include "base/copy_bytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace fabps {
namespace {

TEST(CopyBytes, CopiesExactlyForEveryAlignmentAndSize) {
  const std::vector<size_t> sizes = {0,    1,    63,   64,   65,    2047,
                                     2048, 2049, 4096, 4163, 65536, 262147};
  std::vector<uint8_t> src(262147 + 128), dst(262147 + 256);
  for (size_t i = 0; i < src.size(); i++)
    src[i] = static_cast<uint8_t>(i * 131 + 7);
  int avoided = 0;
  for (size_t n : sizes) {
    for (size_t so = 0; so < 64; so += 3) {
      for (size_t d_off = 0; d_off < 64; d_off += 5) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        if (CopyBytesAvoidsMemcpy(&dst[64 + d_off], &src[so], n)) avoided++;
        CopyBytes(&dst[64 + d_off], &src[so], n);
        for (size_t i = 0; i < 64 + d_off; i++)
          ASSERT_EQ(dst[i], 0xEE) << "wrote before the range: n " << n;
        for (size_t i = 0; i < n; i++)
          ASSERT_EQ(dst[64 + d_off + i], src[so + i])
              << "byte " << i << " of " << n << ", src +" << so << ", dst +"
              << d_off;
        for (size_t i = 64 + d_off + n; i < dst.size(); i++)
          ASSERT_EQ(dst[i], 0xEE) << "wrote past the range: n " << n;
      }
    }
  }
#if defined(__x86_64__)
  EXPECT_GT(avoided, 0) << "the own copy loop never ran";
#endif
}

TEST(CopyBytes, AvoidsMemcpyOnlyWhereRepMovsbIsSlow) {
#if defined(__x86_64__)
  alignas(64) static char buf[8192];
  char* src = buf + 4096;
  EXPECT_TRUE(CopyBytesAvoidsMemcpy(buf + 16, src, 4000));
  EXPECT_TRUE(CopyBytesAvoidsMemcpy(buf + 31, src, 4000));
  EXPECT_TRUE(CopyBytesAvoidsMemcpy(buf + 39, src + 8, 4000));
  EXPECT_FALSE(CopyBytesAvoidsMemcpy(buf, src, 4000));
  EXPECT_FALSE(CopyBytesAvoidsMemcpy(buf + 32, src, 4000));
  EXPECT_FALSE(CopyBytesAvoidsMemcpy(buf + 8, src + 40, 4000));  // below
  EXPECT_FALSE(CopyBytesAvoidsMemcpy(buf + 16, src, 1000));      // vector code
#else
  GTEST_SKIP() << "memcpy is used everywhere off x86-64";
#endif
}

}  // namespace
}  // namespace fabps
