#include "base/little_endian.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace fabps {
namespace {

// The byte order is fixed by the formats, not by the host: spelled out here.
TEST(LittleEndian, StoreAndLoadAtFixedPlaces) {
  unsigned char b[8];
  StoreU16(b, 0x0102);
  EXPECT_EQ(b[0], 0x02);
  EXPECT_EQ(b[1], 0x01);
  EXPECT_EQ(LoadU16(b), 0x0102);
  StoreU32(b, 0x01020304u);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(b), 4), "\x04\x03\x02\x01");
  EXPECT_EQ(LoadU32(b), 0x01020304u);
  StoreU64(b, 0x0102030405060708ull);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(b), 8),
            "\x08\x07\x06\x05\x04\x03\x02\x01");
  EXPECT_EQ(LoadU64(b), 0x0102030405060708ull);
  StoreU32(b, 0xfffffffeu);  // high bits survive (no sign extension)
  EXPECT_EQ(LoadU32(b), 0xfffffffeu);
}

TEST(LittleEndian, WriterLaysOutEveryWidth) {
  std::string out = "x";  // appends after what is there
  ByteWriter w(&out);
  w.U8(0xab);
  w.U16(0x0102);
  w.U32(0x01020304u);
  w.U64(0x0102030405060708ull);
  w.I64(-2);
  w.Str("hi");
  EXPECT_EQ(w.size(), 1u + 1 + 2 + 4 + 8 + 8 + 4 + 2);
  EXPECT_EQ(out, std::string("x\xab\x02\x01\x04\x03\x02\x01"
                             "\x08\x07\x06\x05\x04\x03\x02\x01"
                             "\xfe\xff\xff\xff\xff\xff\xff\xff"
                             "\x02\x00\x00\x00hi",
                             30));
}

TEST(LittleEndian, ReaderReadsBackWhatTheWriterWrote) {
  std::string out;
  ByteWriter w(&out);
  w.U8(7);
  w.U16(65535);
  w.U32(0x89abcdefu);
  w.U64(std::numeric_limits<uint64_t>::max() - 1);
  w.I64(std::numeric_limits<int64_t>::min());
  w.F64(-0.375);
  w.Str("name");
  w.Raw("raw", 3);

  ByteReader r(out);
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  int64_t i64;
  double f64;
  std::string s;
  std::string_view view;
  ASSERT_TRUE(r.U8(&u8) && r.U16(&u16) && r.U32(&u32) && r.U64(&u64) &&
              r.I64(&i64) && r.F64(&f64) && r.Str(&s, 16) && r.View(&view, 3));
  EXPECT_EQ(u8, 7);
  EXPECT_EQ(u16, 65535);
  EXPECT_EQ(u32, 0x89abcdefu);
  EXPECT_EQ(u64, std::numeric_limits<uint64_t>::max() - 1);
  EXPECT_EQ(i64, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f64, -0.375);
  EXPECT_EQ(s, "name");
  EXPECT_EQ(view, "raw");
  EXPECT_EQ(r.left(), 0u);
  EXPECT_EQ(r.offset(), out.size());
  EXPECT_TRUE(r.status("test").ok());
}

// A short read reads nothing, fails every later read and says where.
TEST(LittleEndian, ShortInputFailsAndStaysFailed) {
  const std::string in("\x01\x02\x03\x04\x05\x06", 6);
  ByteReader r(in);
  uint32_t a = 0;
  uint64_t b = 42;
  ASSERT_TRUE(r.U32(&a));
  EXPECT_FALSE(r.U64(&b));
  EXPECT_EQ(b, 42u);
  EXPECT_EQ(r.left(), 2u);
  uint8_t c = 0;
  EXPECT_FALSE(r.U8(&c)) << "a failed reader must not go on";
  EXPECT_TRUE(r.failed());
  Status s = r.status("journal record");
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("journal record"), std::string::npos);
  EXPECT_NE(s.message().find("byte 4"), std::string::npos) << s.ToString();
}

TEST(LittleEndian, StringLengthIsBoundedByMaxAndByInput) {
  std::string out;
  ByteWriter(&out).Str("abcdef");
  std::string s;
  {
    ByteReader r(out);
    EXPECT_FALSE(r.Str(&s, 5)) << "over the caller's bound";
    EXPECT_TRUE(r.failed());
  }
  {
    ByteReader r(out.data(), out.size() - 1);
    EXPECT_FALSE(r.Str(&s, 100)) << "runs past the input";
  }
  {
    std::string huge;
    ByteWriter(&huge).U32(0xffffffffu);
    ByteReader r(huge);
    EXPECT_FALSE(r.Str(&s, std::numeric_limits<size_t>::max()));
  }
  EXPECT_EQ(s, "");
}

// Every cut of a valid encoding fails (none reads past the end).
TEST(LittleEndian, EveryTruncationIsDetected) {
  std::string out;
  ByteWriter w(&out);
  w.U32(1);
  w.Str("payload");
  w.U64(2);
  for (size_t n = 0; n < out.size(); ++n) {
    ByteReader r(out.data(), n);
    uint32_t a;
    std::string s;
    uint64_t b;
    EXPECT_FALSE(r.U32(&a) && r.Str(&s, 64) && r.U64(&b)) << n;
    EXPECT_FALSE(r.status("cut").ok()) << n;
  }
}

}  // namespace
}  // namespace fabps
