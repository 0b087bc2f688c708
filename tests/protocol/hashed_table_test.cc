// Hashed tables' shared arithmetic (protocol/hashed_table.h): where an id
// lives, the initial row of an id, admission and the configuration checks.
// Golden numbers were computed independently (/usr/bin/python3, from the
// formulas in protocol/hashed_table.h and .cc), not by this code.
#include "protocol/hashed_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace fabps::protocol {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
uint64_t DoubleBits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}

TEST(HashedTable, Mix64MatchesSplitmix64Finalizer) {
  EXPECT_EQ(Mix64(0), 0u);
  EXPECT_EQ(Mix64(1), 0x5692161d100b05e5ull);
  EXPECT_EQ(Mix64(2), 0xdbd238973a2b148aull);
  EXPECT_EQ(Mix64(12345), 0xf36cf1164265dd51ull);
  EXPECT_EQ(Mix64(0xdeadbeefull), 0x4e062702ec929eeaull);
  EXPECT_EQ(Mix64(~uint64_t{0}), 0xb4d055fcf2cbbd7bull);
  EXPECT_EQ(Mix64(uint64_t{1} << 63), 0x25c26ea579cea98aull);
}

TEST(HashedTable, BucketOfIdGoldenValues) {
  EXPECT_EQ(BucketOfId(0, 64), 0u);
  EXPECT_EQ(BucketOfId(1, 64), 37u);
  EXPECT_EQ(BucketOfId(12345, 64), 17u);
  EXPECT_EQ(BucketOfId(12345, 1000), 873u);
  EXPECT_EQ(BucketOfId(0xdeadbeefull, 7), 6u);
  EXPECT_EQ(BucketOfId(~uint64_t{0}, 65536), 48507u);
  EXPECT_EQ(BucketOfId(42, 1), 0u);
}

TEST(HashedTable, BucketOfIdInRangeAndSpread) {
  for (uint32_t buckets : {1u, 3u, 64u, 1000u, 65536u}) {
    for (uint64_t id = 0; id < 2000; ++id) {
      EXPECT_LT(BucketOfId(id * 0x9e3779b9ull, buckets), buckets);
    }
  }
  // 100k sequential ids over 64 buckets: mean 1562.5 a bucket.
  std::vector<uint32_t> count(64);
  for (uint64_t id = 0; id < 100000; ++id) count[BucketOfId(id, 64)]++;
  for (uint32_t b = 0; b < 64; ++b) {
    EXPECT_GE(count[b], 1200u) << "bucket " << b;
    EXPECT_LE(count[b], 1925u) << "bucket " << b;
  }
}

TEST(HashedTable, InitialRowZeros) {
  TableConfig c;
  c.init = RowInit::kZeros;
  c.init_scale = 3;
  std::vector<float> f(17, 9.5f);
  InitialRow(c, 1234, DType::kFloat32, 16, f.data());
  for (int j = 0; j < 16; ++j) EXPECT_EQ(FloatBits(f[j]), 0u) << j;
  EXPECT_EQ(f[16], 9.5f);  // writes exactly row_elements elements
  std::vector<double> d(9, 9.5);
  InitialRow(c, 1234, DType::kFloat64, 8, d.data());
  for (int j = 0; j < 8; ++j) EXPECT_EQ(DoubleBits(d[j]), 0u) << j;
  EXPECT_EQ(d[8], 9.5);
}

TEST(HashedTable, InitialRowUniformGoldenFloat32) {
  TableConfig c;
  c.init = RowInit::kUniform;
  c.init_scale = 0.5;
  c.seed = 7;
  float f[4];
  InitialRow(c, 123456789, DType::kFloat32, 4, f);
  EXPECT_EQ(FloatBits(f[0]), 0x3d9ac36cu) << f[0];  // 0.0755680501...
  EXPECT_EQ(FloatBits(f[1]), 0xbee3aa04u) << f[1];  // -0.4446564912...
  EXPECT_EQ(FloatBits(f[2]), 0x3e8a6764u) << f[2];  // 0.2703200578...
  EXPECT_EQ(FloatBits(f[3]), 0x3efd49f4u) << f[3];  // 0.4947048425...
}

TEST(HashedTable, InitialRowUniformGoldenFloat64) {
  TableConfig c;
  c.init = RowInit::kUniform;
  c.init_scale = 0.5;
  c.seed = 7;
  double d[4];
  InitialRow(c, 123456789, DType::kFloat64, 4, d);
  EXPECT_EQ(DoubleBits(d[0]), 0x3fb3586d782e7270ull) << d[0];
  EXPECT_EQ(DoubleBits(d[1]), 0xbfdc75408fe69638ull) << d[1];
  EXPECT_EQ(DoubleBits(d[2]), 0x3fd14cec7826909eull) << d[2];
  EXPECT_EQ(DoubleBits(d[3]), 0x3fdfa93e76d9aac2ull) << d[3];
  // The float32 row is the float64 row rounded.
  float f[4];
  InitialRow(c, 123456789, DType::kFloat32, 4, f);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(f[j], static_cast<float>(d[j])) << j;
}

TEST(HashedTable, InitialRowUniformRangeAndDeterminism) {
  TableConfig c;
  c.init = RowInit::kUniform;
  c.init_scale = 0.25;
  c.seed = 99;
  constexpr int kR = 32;
  double lo = 1, hi = -1;
  for (uint64_t id = 0; id < 2000; ++id) {
    float a[kR], b[kR];
    InitialRow(c, id, DType::kFloat32, kR, a);
    InitialRow(c, id, DType::kFloat32, kR, b);
    EXPECT_EQ(std::memcmp(a, b, sizeof(a)), 0) << "id " << id;
    double d[kR];
    InitialRow(c, id, DType::kFloat64, kR, d);
    for (int j = 0; j < kR; ++j) {
      ASSERT_GE(d[j], -0.25) << id << " " << j;
      ASSERT_LT(d[j], 0.25) << id << " " << j;
      ASSERT_GE(a[j], -0.25f);
      ASSERT_LE(a[j], 0.25f);  // float rounding may reach the bound
      lo = std::min(lo, d[j]);
      hi = std::max(hi, d[j]);
    }
  }
  // 64000 draws cover the interval.
  EXPECT_LT(lo, -0.249);
  EXPECT_GT(hi, 0.249);

  // Another seed, another id, another element: other bits.
  float base[kR], other_seed[kR], other_id[kR];
  InitialRow(c, 5, DType::kFloat32, kR, base);
  TableConfig c2 = c;
  c2.seed = 100;
  InitialRow(c2, 5, DType::kFloat32, kR, other_seed);
  InitialRow(c, 6, DType::kFloat32, kR, other_id);
  int same_seed = 0, same_id = 0;
  for (int j = 0; j < kR; ++j) {
    same_seed += base[j] == other_seed[j];
    same_id += base[j] == other_id[j];
    if (j > 0) {
      EXPECT_NE(base[j], base[j - 1]);
    }
  }
  EXPECT_EQ(same_seed, 0);
  EXPECT_EQ(same_id, 0);
  // The scale multiplies: scale 0.5 gives twice the values (exactly, a
  // power of two).
  TableConfig c3 = c;
  c3.init_scale = 0.5;
  double d1[kR], d2[kR];
  InitialRow(c, 77, DType::kFloat64, kR, d1);
  InitialRow(c3, 77, DType::kFloat64, kR, d2);
  for (int j = 0; j < kR; ++j) EXPECT_EQ(d2[j], 2 * d1[j]) << j;
  // A row of more elements starts with the shorter row.
  double longer[2 * kR];
  InitialRow(c, 77, DType::kFloat64, 2 * kR, longer);
  EXPECT_EQ(std::memcmp(longer, d1, sizeof(d1)), 0);
}

TEST(HashedTable, InitialRowNormalGoldenAndMoments) {
  TableConfig c;
  c.init = RowInit::kNormal;
  c.init_scale = 0.25;
  c.seed = 11;
  double d[3];
  InitialRow(c, 987654321, DType::kFloat64, 3, d);
  // Box-Muller as protocol/hashed_table.cc states it, computed in Python
  // (libm may differ in the last bits: a relative 1e-12).
  EXPECT_NEAR(d[0], 0.17508510522227055, 1e-12);
  EXPECT_NEAR(d[1], 0.21077620566036112, 1e-12);
  EXPECT_NEAR(d[2], 0.048729620444410426, 1e-12);
  float f[3];
  InitialRow(c, 987654321, DType::kFloat32, 3, f);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(f[j], static_cast<float>(d[j]));

  // Moments over 200000 elements with scale 2: the mean's standard error is
  // 2/sqrt(2e5) ~ 0.0045.
  c.init_scale = 2;
  c.seed = 12345;
  constexpr int kR = 100;
  double sum = 0, sum2 = 0, sum4 = 0;
  uint64_t n = 0, beyond_3sd = 0;
  for (uint64_t id = 0; id < 2000; ++id) {
    double row[kR];
    InitialRow(c, id * 1000003, DType::kFloat64, kR, row);
    for (double x : row) {
      ASSERT_TRUE(std::isfinite(x));
      sum += x;
      sum2 += x * x;
      sum4 += x * x * x * x;
      beyond_3sd += std::fabs(x) > 6;
      n++;
    }
  }
  const double mean = sum / n;
  const double var = sum2 / n - mean * mean;
  EXPECT_LT(std::fabs(mean), 0.03) << mean;
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.03) << std::sqrt(var);
  // Normal, not uniform: kurtosis 3 (a uniform's is 1.8) and about 0.27%
  // beyond 3 standard deviations.
  EXPECT_NEAR(sum4 / n / (var * var), 3.0, 0.15);
  EXPECT_GT(beyond_3sd, 300u);
  EXPECT_LT(beyond_3sd, 800u);
}

TEST(HashedTable, AdmitsByCount) {
  TableConfig c;
  c.admit_after = 3;
  for (uint64_t id = 0; id < 1000; ++id) {
    EXPECT_FALSE(Admits(c, id, 0));
    EXPECT_FALSE(Admits(c, id, 1));
    EXPECT_FALSE(Admits(c, id, 2));
    EXPECT_TRUE(Admits(c, id, 3));
    EXPECT_TRUE(Admits(c, id, 4));
    EXPECT_TRUE(Admits(c, id, 255));
  }
  c.admit_after = 1;
  EXPECT_TRUE(Admits(c, 17, 1));
}

TEST(HashedTable, AdmitsByProbability) {
  TableConfig c;
  c.seed = 3;
  c.admit_probability = 0.25;
  uint64_t admitted = 0, again = 0, second = 0;
  for (uint64_t id = 0; id < 20000; ++id) {
    const bool a = Admits(c, id, 1);
    admitted += a;
    again += Admits(c, id, 1);
    EXPECT_EQ(a, Admits(c, id, 1)) << id;  // deterministic
    second += Admits(c, id, 2);
  }
  EXPECT_GE(admitted, 20000 * 0.22);
  EXPECT_LE(admitted, 20000 * 0.28);
  EXPECT_EQ(admitted, again);
  // Counted independently in Python from the formula.
  EXPECT_EQ(admitted, 5067u);
  EXPECT_EQ(second, 4981u);

  // Below admit_after the probability does not matter.
  c.admit_after = 3;
  uint64_t early = 0, late = 0;
  for (uint64_t id = 0; id < 20000; ++id) {
    early += Admits(c, id, 1) + Admits(c, id, 2);
    late += Admits(c, id, 3);
  }
  EXPECT_EQ(early, 0u);
  EXPECT_GE(late, 20000 * 0.22);
  EXPECT_LE(late, 20000 * 0.28);

  // Another seed draws differently.
  TableConfig d = c;
  d.admit_after = 1;
  d.seed = 4;
  c.admit_after = 1;
  int differ = 0;
  for (uint64_t id = 0; id < 1000; ++id)
    differ += Admits(c, id, 1) != Admits(d, id, 1);
  EXPECT_GT(differ, 200);
}

void ExpectRefused(const TableConfig& c, const std::string& field,
                   const std::string& what) {
  Status s = ValidateTableConfig(c);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << what;
  EXPECT_NE(s.message().find(field), std::string::npos)
      << what << ": " << s.ToString();
}

TEST(HashedTable, ValidateTableConfigNamesTheBadField) {
  TableConfig good;
  EXPECT_TRUE(ValidateTableConfig(good).ok());
  TableConfig edge;
  edge.init = RowInit::kNormal;
  edge.init_scale = 0;
  edge.admit_after = kMaxAdmitAfter;
  edge.admit_probability = 1;
  EXPECT_TRUE(ValidateTableConfig(edge).ok());
  edge.admit_probability = 1e-9;
  edge.admit_after = 1;
  EXPECT_TRUE(ValidateTableConfig(edge).ok());

  TableConfig c = good;
  c.init = static_cast<RowInit>(7);
  ExpectRefused(c, "init 7", "init 7");
  c = good;
  c.init_scale = -1;
  ExpectRefused(c, "init_scale", "scale -1");
  c.init_scale = std::numeric_limits<double>::quiet_NaN();
  ExpectRefused(c, "init_scale", "scale NaN");
  c.init_scale = std::numeric_limits<double>::infinity();
  ExpectRefused(c, "init_scale", "scale inf");
  c = good;
  c.admit_after = 0;
  ExpectRefused(c, "admit_after", "admit_after 0");
  c.admit_after = 256;
  ExpectRefused(c, "admit_after", "admit_after 256");
  c = good;
  c.admit_probability = 0;
  ExpectRefused(c, "admit_probability", "probability 0");
  c.admit_probability = 1.5;
  ExpectRefused(c, "admit_probability", "probability 1.5");
  c.admit_probability = -0.5;
  ExpectRefused(c, "admit_probability", "probability -0.5");
  c.admit_probability = std::numeric_limits<double>::quiet_NaN();
  ExpectRefused(c, "admit_probability", "probability NaN");
}

TEST(HashedTable, RowInitNamesRoundTripAndOthersAreRefused) {
  EXPECT_STREQ(RowInitName(RowInit::kZeros), "zeros");
  EXPECT_STREQ(RowInitName(RowInit::kUniform), "uniform");
  EXPECT_STREQ(RowInitName(RowInit::kNormal), "normal");
  EXPECT_STREQ(RowInitName(static_cast<RowInit>(9)), "unknown");
  for (RowInit i : {RowInit::kZeros, RowInit::kUniform, RowInit::kNormal}) {
    auto back = RowInitFromName(RowInitName(i));
    ASSERT_TRUE(back.ok()) << RowInitName(i);
    EXPECT_EQ(*back, i);
  }
  // The numbers are a wire contract.
  EXPECT_EQ(static_cast<uint32_t>(RowInit::kZeros), 0u);
  EXPECT_EQ(static_cast<uint32_t>(RowInit::kUniform), 1u);
  EXPECT_EQ(static_cast<uint32_t>(RowInit::kNormal), 2u);
  for (const char* bad : {"", "Zeros", "gaussian", "unknown", "uniform "}) {
    auto r = RowInitFromName(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("zeros, uniform, normal"),
              std::string::npos)
        << r.status().ToString();
  }
}

}  // namespace
}  // namespace fabps::protocol
