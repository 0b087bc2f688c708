#include "base/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace fabps {
namespace {

TEST(Status, OkIsCheapAndEmpty) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(s.message(), "");
}

TEST(Status, CarriesCodeAndMessage) {
  Status s = Status::TimedOut("wait for completion");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kTimedOut);
  EXPECT_EQ(s.ToString(), "TimedOut: wait for completion");
  EXPECT_EQ(s.WithContext("pserver 2").ToString(),
            "TimedOut: pserver 2: wait for completion");
}

TEST(Status, PosixErrorMapsCodes) {
  EXPECT_EQ(PosixError("open x", ENOENT).code(), Status::Code::kNotFound);
  EXPECT_EQ(PosixError("recv", ECONNRESET).code(), Status::Code::kUnavailable);
  EXPECT_EQ(PosixError("poll", ETIMEDOUT).code(), Status::Code::kTimedOut);
  EXPECT_NE(PosixError("open x", ENOENT).message().find("open x"),
            std::string::npos);
}

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd");
  return x / 2;
}

Status UseHalf(int x, int* out) {
  FABPS_ASSIGN_OR_RETURN(int h, Half(x));
  *out = h;
  return Status::OK();
}

TEST(Result, ValueOrError) {
  int out = 0;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  Status s = UseHalf(3, &out);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(out, 4);
}

}  // namespace
}  // namespace fabps

#include "base/hex.h"

namespace fabps {
namespace {

TEST(Hex, RoundTripAndRejects) {
  std::string bytes("\x00\x01\xfe\xff\x7f", 5);
  EXPECT_EQ(HexEncode(bytes), "0001feff7f");
  auto back = HexDecode("0001FEff7f");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
  EXPECT_FALSE(HexDecode("abc").ok());
  EXPECT_FALSE(HexDecode("zz").ok());
}

}  // namespace
}  // namespace fabps
