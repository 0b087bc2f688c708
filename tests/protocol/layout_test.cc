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

// The bytes of a layout as layout.h documents them, written here by hand:
// version 1 (no kinds) or 2 (kind and buckets after each shape).
class LayoutBytes {
 public:
  LayoutBytes(uint32_t version, uint32_t n, uint64_t block_elements,
              uint32_t params) {
    out_.append("FABPSLY1", 8);
    U32(version);
    U32(n);
    U64(block_elements);
    U32(params);
  }
  void Param(const std::string& name, uint32_t dtype,
             const std::vector<uint64_t>& shape) {
    U32(static_cast<uint32_t>(name.size()));
    out_ += name;
    U32(dtype);
    U32(static_cast<uint32_t>(shape.size()));
    for (uint64_t d : shape) U64(d);
  }
  void U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  void U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  // Appends the CRC32C of everything so far.
  std::string Sealed() const {
    std::string s = out_;
    const uint32_t crc = crc32c::Value(s.data(), s.size());
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(crc >> (8 * i)));
    return s;
  }

 private:
  std::string out_;
};

uint32_t VersionOf(const std::string& bytes) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[8 + i]))
         << (8 * i);
  return v;
}

// A dense "fc" [100, 8], hashed "emb" (rows [4, 4], 8 buckets), dense "b".
std::vector<ParamSpec> HashedParams(uint32_t buckets = 8) {
  return {{"fc", DType::kFloat32, {100, 8}},
          HashedSpec("emb", DType::kFloat32, {4, 4}, buckets),
          {"b", DType::kFloat64, {5}}};
}

TEST(Layout, DenseOnlyLayoutStillEncodesAsVersion1) {
  auto l = Layout::Build(
      {{"w", DType::kFloat32, {10, 3}}, {"s", DType::kFloat64, {}}}, 8, 3);
  ASSERT_TRUE(l.ok());
  const std::string bytes = l->Encode();
  EXPECT_EQ(VersionOf(bytes), 1u);
  // Exactly the bytes of the format before hashed tables existed.
  LayoutBytes want(1, 3, 8, 2);
  want.Param("w", static_cast<uint32_t>(DType::kFloat32), {10, 3});
  want.Param("s", static_cast<uint32_t>(DType::kFloat64), {});
  want.U64(l->num_blocks());
  EXPECT_EQ(l->num_blocks(), 5u + 1u);  // 2 rows a block: 5, and the scalar
  EXPECT_EQ(bytes, want.Sealed());
}

TEST(Layout, HashedLayoutEncodesAsVersion2WithKindsAndBuckets) {
  auto l = Layout::Build(HashedParams(), 100, 3);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const std::string bytes = l->Encode();
  EXPECT_EQ(VersionOf(bytes), 2u);
  LayoutBytes want(2, 3, 100, 3);
  want.Param("fc", static_cast<uint32_t>(DType::kFloat32), {100, 8});
  want.U32(0);  // dense
  want.U32(0);
  want.Param("emb", static_cast<uint32_t>(DType::kFloat32), {4, 4});
  want.U32(1);  // hashed
  want.U32(8);
  want.Param("b", static_cast<uint32_t>(DType::kFloat64), {5});
  want.U32(0);
  want.U32(0);
  // fc: 12 rows a block -> 9 blocks; emb: 8 buckets; b: 1 block.
  want.U64(9 + 8 + 1);
  EXPECT_EQ(l->num_blocks(), 18u);
  EXPECT_EQ(bytes, want.Sealed());
}

TEST(Layout, HashedLayoutRoundTrips) {
  auto l = Layout::Build(HashedParams(), 100, 3);
  ASSERT_TRUE(l.ok());
  const std::string bytes = l->Encode();
  auto d = Layout::Decode(bytes.data(), bytes.size());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->SameAs(*l));
  EXPECT_EQ(d->Encode(), bytes);
  ASSERT_EQ(d->params().size(), 3u);
  EXPECT_EQ(d->params()[0].kind, ParamKind::kDense);
  EXPECT_EQ(d->params()[0].buckets, 0u);
  EXPECT_EQ(d->params()[1].kind, ParamKind::kHashed);
  EXPECT_EQ(d->params()[1].buckets, 8u);
  EXPECT_EQ(d->params()[1].shape, (std::vector<uint64_t>{4, 4}));
  EXPECT_EQ(d->params()[2].kind, ParamKind::kDense);
  ASSERT_EQ(d->num_blocks(), l->num_blocks());
  for (size_t i = 0; i < l->num_blocks(); ++i) {
    const BlockInfo& a = l->blocks()[i];
    const BlockInfo& b = d->blocks()[i];
    EXPECT_EQ(a.pserver, b.pserver) << i;
    EXPECT_EQ(a.buckets, b.buckets) << i;
    EXPECT_EQ(a.num_rows, b.num_rows) << i;
    EXPECT_EQ(a.first_row, b.first_row) << i;
  }
  // Every flipped byte and every truncation of a v2 layout is refused too.
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    EXPECT_FALSE(Layout::Decode(bad.data(), bad.size()).ok()) << "byte " << i;
  }
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(Layout::Decode(bytes.data(), n).ok()) << "length " << n;
}

TEST(Layout, HashedTableBucketsAreItsBlocks) {
  for (uint32_t n : {1u, 3u, 5u}) {
    auto l = Layout::Build(HashedParams(), 100, n);
    ASSERT_TRUE(l.ok());
    const uint32_t first = l->FirstBlockOf(1);
    EXPECT_EQ(first, 9u);
    EXPECT_EQ(l->FirstBlockOf(2), first + 8);
    const uint64_t h = Layout::HashName("emb");
    uint32_t count = 0;
    for (const BlockInfo& b : l->blocks()) {
      if (b.param != 1) {
        EXPECT_EQ(b.buckets, 0u);
        EXPECT_FALSE(IsHashedBlock(b));
        continue;
      }
      const uint32_t k = count++;
      EXPECT_EQ(b.id, first + k);
      EXPECT_EQ(b.index_in_param, k);
      EXPECT_TRUE(IsHashedBlock(b));
      EXPECT_EQ(b.buckets, 8u);
      EXPECT_EQ(b.first_row, 0u);
      EXPECT_EQ(b.first_element, 0u);
      EXPECT_EQ(b.row_elements, 16u);
      EXPECT_EQ(b.num_rows, 6u);  // max(1, 100 / 16)
      EXPECT_EQ(b.num_elements, 96u);
      unsigned __int128 sum = static_cast<unsigned __int128>(h) + k;
      EXPECT_EQ(b.pserver, static_cast<uint32_t>(sum % n)) << "N=" << n;
    }
    EXPECT_EQ(count, 8u);
  }
  // A row larger than a block: one row a push.
  auto small = Layout::Build(HashedParams(3), 10, 2);
  ASSERT_TRUE(small.ok());
  const BlockInfo& b = small->blocks()[small->FirstBlockOf(1)];
  EXPECT_EQ(b.num_rows, 1u);
  EXPECT_EQ(b.num_elements, 16u);
  EXPECT_EQ(b.buckets, 3u);
  EXPECT_EQ(small->FirstBlockOf(2) - small->FirstBlockOf(1), 3u);
}

TEST(Layout, DecodeRefusesVersion2WithoutAHashedTable) {
  // Canonical bytes: a dense-only layout is always version 1.
  LayoutBytes v2(2, 1, 100, 1);
  v2.Param("w", static_cast<uint32_t>(DType::kFloat32), {10, 3});
  v2.U32(0);
  v2.U32(0);
  v2.U64(1);
  std::string bytes = v2.Sealed();
  auto d = Layout::Decode(bytes.data(), bytes.size());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Status::Code::kCorruption);
  EXPECT_NE(d.status().message().find("version 2 without a hashed table"),
            std::string::npos)
      << d.status().ToString();
  // The same parameter as version 1 decodes.
  LayoutBytes v1(1, 1, 100, 1);
  v1.Param("w", static_cast<uint32_t>(DType::kFloat32), {10, 3});
  v1.U64(1);
  bytes = v1.Sealed();
  EXPECT_TRUE(Layout::Decode(bytes.data(), bytes.size()).ok());
  // Version 3 is unknown.
  LayoutBytes v3(3, 1, 100, 1);
  v3.Param("w", static_cast<uint32_t>(DType::kFloat32), {10, 3});
  v3.U64(1);
  bytes = v3.Sealed();
  d = Layout::Decode(bytes.data(), bytes.size());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("version 3"), std::string::npos);
}

TEST(Layout, DecodeRefusesTruncatedOrBadKinds) {
  // The kind is there, the bucket count is not (valid CRC).
  LayoutBytes cut(2, 1, 100, 1);
  cut.Param("e", static_cast<uint32_t>(DType::kFloat32), {4});
  cut.U32(1);
  std::string bytes = cut.Sealed();
  auto d = Layout::Decode(bytes.data(), bytes.size());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Status::Code::kCorruption);
  EXPECT_NE(d.status().message().find("truncated kind"), std::string::npos)
      << d.status().ToString();

  auto with = [](uint32_t kind, uint32_t buckets, uint64_t blocks) {
    LayoutBytes b(2, 2, 100, 2);
    b.Param("e", static_cast<uint32_t>(DType::kFloat32), {4});
    b.U32(1);
    b.U32(4);
    b.Param("x", static_cast<uint32_t>(DType::kFloat32), {8});
    b.U32(kind);
    b.U32(buckets);
    b.U64(blocks);
    return b.Sealed();
  };
  bytes = with(0, 0, 5);  // well formed: 4 buckets and a dense block
  d = Layout::Decode(bytes.data(), bytes.size());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->Encode(), bytes);
  bytes = with(7, 0, 5);  // unknown kind
  d = Layout::Decode(bytes.data(), bytes.size());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("unknown kind 7"), std::string::npos)
      << d.status().ToString();
  bytes = with(0, 3, 5);  // dense with buckets
  EXPECT_FALSE(Layout::Decode(bytes.data(), bytes.size()).ok());
  bytes = with(1, 0, 4);  // hashed with no bucket
  EXPECT_FALSE(Layout::Decode(bytes.data(), bytes.size()).ok());
  bytes = with(1, 2, 6);  // two hashed tables: 4 + 2 buckets
  d = Layout::Decode(bytes.data(), bytes.size());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->num_blocks(), 6u);
  bytes = with(1, 2, 5);  // wrong block count
  EXPECT_FALSE(Layout::Decode(bytes.data(), bytes.size()).ok());
}

TEST(Layout, DescribesHashedDifferences) {
  auto hashed8 = Layout::Build(HashedParams(8), 100, 3);
  auto hashed16 = Layout::Build(HashedParams(16), 100, 3);
  auto params = HashedParams();
  params[1] = {"emb", DType::kFloat32, {4, 4}};
  auto dense = Layout::Build(params, 100, 3);
  ASSERT_TRUE(hashed8.ok() && hashed16.ok() && dense.ok());
  EXPECT_EQ(Layout::DescribeDifference(*hashed8, *hashed8), "");
  EXPECT_EQ(Layout::DescribeDifference(*hashed8, *hashed16),
            "parameter 1 'emb' hashed (8 buckets) vs hashed (16 buckets)");
  EXPECT_EQ(Layout::DescribeDifference(*dense, *hashed8),
            "parameter 1 'emb' dense vs hashed (8 buckets)");
  EXPECT_EQ(Layout::DescribeDifference(*hashed8, *dense),
            "parameter 1 'emb' hashed (8 buckets) vs dense");
  EXPECT_FALSE(hashed8->SameAs(*hashed16));
  EXPECT_FALSE(hashed8->SameAs(*dense));
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
