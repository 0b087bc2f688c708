#include "base/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace fabps {
namespace {

// Test vectors from RFC 3720, appendix B.4.
TEST(Crc32c, Rfc3720Vectors) {
  std::vector<uint8_t> buf(32, 0);
  EXPECT_EQ(crc32c::Value(buf.data(), buf.size()), 0x8a9136aau);
  std::fill(buf.begin(), buf.end(), 0xff);
  EXPECT_EQ(crc32c::Value(buf.data(), buf.size()), 0x62a8ab43u);
  for (int i = 0; i < 32; i++) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(crc32c::Value(buf.data(), buf.size()), 0x46dd794eu);
  for (int i = 0; i < 32; i++) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(crc32c::Value(buf.data(), buf.size()), 0x113fdb5cu);
  EXPECT_EQ(crc32c::Value("123456789", 9), 0xe3069283u);
}

TEST(Crc32c, ExtendEqualsWhole) {
  std::string s = "the quick brown fox jumps over the lazy dog, twice over";
  for (size_t cut = 0; cut <= s.size(); cut++) {
    uint32_t a = crc32c::Extend(crc32c::Value(s.data(), cut), s.data() + cut,
                                s.size() - cut);
    EXPECT_EQ(a, crc32c::Value(s.data(), s.size())) << "cut at " << cut;
  }
}

TEST(Crc32c, DetectsEveryOneBitFlip) {
  std::vector<uint8_t> buf(97);
  for (size_t i = 0; i < buf.size(); i++)
    buf[i] = static_cast<uint8_t>(i * 7 + 3);
  uint32_t good = crc32c::Value(buf.data(), buf.size());
  for (size_t i = 0; i < buf.size(); i++) {
    for (int b = 0; b < 8; b++) {
      buf[i] ^= (1u << b);
      EXPECT_NE(crc32c::Value(buf.data(), buf.size()), good);
      buf[i] ^= (1u << b);
    }
  }
}

}  // namespace
}  // namespace fabps
