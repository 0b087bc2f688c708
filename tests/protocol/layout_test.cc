#include "protocol/layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "base/crc32c.h"

namespace fabps::protocol {
namespace {

std::vector<ParamSpec> SomeParams() {
  return {
      {"embedding", DType::kFloat32, {1000, 64}},
      {"fc1.w", DType::kFloat32, {256, 128}},
      {"fc1.b", DType::kFloat64, {128}},
      {"scale", DType::kFloat32, {}},
  };
}

TEST(Layout, BlocksCoverEachParameterExactlyOnceWithWholeRows) {
  auto l = Layout::Build(SomeParams(), 5000, 3);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  uint32_t expect_id = 0;
  for (uint32_t p = 0; p < l->params().size(); ++p) {
    uint64_t next = 0;
    for (const BlockInfo& b : l->blocks()) {
      if (b.param != p) continue;
      EXPECT_EQ(b.id, expect_id++);
      EXPECT_EQ(b.first_element, next);
      EXPECT_EQ(b.num_elements, b.num_rows * b.row_elements);
      EXPECT_EQ(b.first_element % b.row_elements, 0u);
      EXPECT_LE(b.num_elements, std::max<uint64_t>(5000, b.row_elements));
      EXPECT_LT(b.pserver, 3u);
      next += b.num_elements;
    }
    uint64_t total = 1;
    for (uint64_t d : l->params()[p].shape) total *= d;
    EXPECT_EQ(next, total) << l->params()[p].name;
  }
  // embedding: rows of 64, 78 rows per block -> 13 blocks.
  EXPECT_EQ(l->blocks()[0].num_rows, 78u);
  EXPECT_EQ(l->blocks()[0].num_elements, 78u * 64);
}

TEST(Layout, OwnerFollowsDocumentedHash) {
  // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c (published test vector).
  EXPECT_EQ(Layout::HashName("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Layout::HashName(""), 0xcbf29ce484222325ull);
  auto l = Layout::Build(SomeParams(), 1000, 7);
  ASSERT_TRUE(l.ok());
  for (const BlockInfo& b : l->blocks()) {
    uint64_t h = Layout::HashName(l->params()[b.param].name);
    // (h + b) mod N, as a mathematical sum (no 64-bit wrap).
    unsigned __int128 sum =
        static_cast<unsigned __int128>(h) + b.index_in_param;
    EXPECT_EQ(b.pserver, static_cast<uint32_t>(sum % 7));
  }
}

TEST(Layout, DeterministicAcrossBuilds) {
  auto a = Layout::Build(SomeParams(), 1000, 4);
  auto b = Layout::Build(SomeParams(), 1000, 4);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->Encode(), b->Encode());
  ASSERT_EQ(a->num_blocks(), b->num_blocks());
  for (size_t i = 0; i < a->num_blocks(); ++i) {
    EXPECT_EQ(a->blocks()[i].pserver, b->blocks()[i].pserver);
  }
  EXPECT_TRUE(a->SameAs(*b));
}

TEST(Layout, LargeParameterSpreadsEvenly) {
  for (uint32_t n : {1u, 2u, 3u, 5u, 8u}) {
    auto l = Layout::Build(
        {{"big", DType::kFloat32, {uint64_t{10} * n * 1024}}}, 1024, n);
    ASSERT_TRUE(l.ok());
    for (uint32_t s = 0; s < n; ++s) {
      EXPECT_EQ(l->BlocksOf(s).size(), 10u) << "N=" << n << " s=" << s;
    }
  }
}

TEST(Layout, ManySmallParametersBalance) {
  std::vector<ParamSpec> params;
  for (int i = 0; i < 4000; ++i) {
    params.push_back(
        {"layer" + std::to_string(i) + ".w", DType::kFloat32, {10}});
  }
  const uint32_t n = 4;
  auto l = Layout::Build(params, 1024, n);
  ASSERT_TRUE(l.ok());
  for (uint32_t s = 0; s < n; ++s) {
    size_t count = l->BlocksOf(s).size();
    // Mean 1000; a fair hash stays well inside +-10%.
    EXPECT_GT(count, 900u) << s;
    EXPECT_LT(count, 1100u) << s;
  }
}

TEST(Layout, BuildRejectsBadInput) {
  EXPECT_FALSE(Layout::Build(SomeParams(), 1000, 0).ok());
  EXPECT_FALSE(Layout::Build(SomeParams(), 0, 2).ok());
  EXPECT_FALSE(Layout::Build({{"", DType::kFloat32, {1}}}, 10, 1).ok());
  EXPECT_FALSE(Layout::Build({{"x", DType::kFloat32, {0}}}, 10, 1).ok());
  EXPECT_FALSE(
      Layout::Build({{"x", DType::kFloat32, {1u << 30, 1u << 30}}}, 10, 1)
          .ok());
  EXPECT_FALSE(Layout::Build({{"x", static_cast<DType>(9), {1}}}, 10, 1).ok());
  auto dup = Layout::Build(
      {{"x", DType::kFloat32, {1}}, {"x", DType::kFloat32, {2}}}, 10, 1);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("duplicate"), std::string::npos);
}

TEST(Layout, EncodeDecodeRoundTrip) {
  auto l = Layout::Build(SomeParams(), 777, 5);
  ASSERT_TRUE(l.ok());
  std::string bytes = l->Encode();
  auto d = Layout::Decode(bytes.data(), bytes.size());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->SameAs(*l));
  EXPECT_EQ(d->Encode(), bytes);
  EXPECT_EQ(d->num_blocks(), l->num_blocks());
}

TEST(Layout, DecodeRejectsEveryFlippedByteAndTruncation) {
  auto l = Layout::Build(SomeParams(), 777, 5);
  ASSERT_TRUE(l.ok());
  const std::string bytes = l->Encode();
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (unsigned char mask : {0x01, 0x80, 0xff}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      EXPECT_FALSE(Layout::Decode(bad.data(), bad.size()).ok())
          << "byte " << i << " mask " << int(mask);
    }
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(Layout::Decode(bytes.data(), n).ok()) << "length " << n;
  }
  std::string longer = bytes + "x";
  EXPECT_FALSE(Layout::Decode(longer.data(), longer.size()).ok());
}

// Bytes with a valid CRC but inconsistent content must still be refused:
// the CRC only protects against accidents, not against a buggy peer.
TEST(Layout, DecodeValidatesContentBehindAValidCrc) {
  auto reseal = [](std::string s) {
    s.resize(s.size() - 4);
    uint32_t crc = crc32c::Value(s.data(), s.size());
    s.append(reinterpret_cast<const char*>(&crc), 4);
    return s;
  };
  auto l = Layout::Build(
      {{"x", DType::kFloat32, {100}}, {"y", DType::kFloat32, {100}}}, 10, 2);
  ASSERT_TRUE(l.ok());
  std::string bytes = l->Encode();
  // Rename y to x: duplicate (overlapping) parameters.
  std::string dup = bytes;
  size_t pos = dup.find('y');
  ASSERT_NE(pos, std::string::npos);
  dup[pos] = 'x';
  auto d = Layout::Decode(reseal(dup).data(), dup.size());
  EXPECT_FALSE(d.ok());
  // Wrong block count.
  std::string count = bytes;
  count[count.size() - 12] ^= 1;
  std::string sealed = reseal(count);
  EXPECT_FALSE(Layout::Decode(sealed.data(), sealed.size()).ok());
  // Huge parameter count with few bytes.
  std::string many = bytes;
  uint32_t big = 1u << 19;
  std::memcpy(&many[24], &big, 4);
  sealed = reseal(many);
  EXPECT_FALSE(Layout::Decode(sealed.data(), sealed.size()).ok());
}

TEST(Layout, DescribesDifferences) {
  auto a = Layout::Build(SomeParams(), 1000, 4);
  auto b = Layout::Build(SomeParams(), 1000, 3);
  auto params = SomeParams();
  params[1].shape = {256, 129};
  auto c = Layout::Build(params, 1000, 4);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(Layout::DescribeDifference(*a, *a), "");
  EXPECT_NE(Layout::DescribeDifference(*a, *b).find("pservers 4 vs 3"),
            std::string::npos);
  EXPECT_NE(Layout::DescribeDifference(*a, *c).find("fc1.w"),
            std::string::npos);
}

TEST(Layout, FindParamAndBlocksOf) {
  auto l = Layout::Build(SomeParams(), 1000, 2);
  ASSERT_TRUE(l.ok());
  auto p = l->FindParam("fc1.b");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, 2u);
  EXPECT_FALSE(l->FindParam("nope").ok());
  size_t total = l->BlocksOf(0).size() + l->BlocksOf(1).size();
  EXPECT_EQ(total, l->num_blocks());
  EXPECT_EQ(l->blocks()[l->FirstBlockOf(1)].param, 1u);
}

}  // namespace
}  // namespace fabps::protocol
