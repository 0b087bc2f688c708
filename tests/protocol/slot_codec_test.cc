// The push word (protocol/wire.h) and the landing-slot codec
// (protocol/slot_codec.h): what the encoders write is byte for byte what
// docs/formats/wire.md draws, the parsers read back what the encoders wrote,
// and every lie a header can tell is refused.
#include "protocol/slot_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "protocol/sparse_rows.h"

namespace fabps::protocol {
namespace {

using wire::PushKind;

TEST(PushWord, KindsRoundTripAndOtherTagsAreRefused) {
  for (PushKind k : {PushKind::kDense, PushKind::kRows, PushKind::kRowsRead,
                     PushKind::kDenseStep, PushKind::kRowsStep}) {
    auto d = wire::DecodePush(wire::EncodePush({3, 7, 12345, k}));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->kind, k);
    EXPECT_EQ(d->trainer, 3u);
    EXPECT_EQ(d->slot, 7u);
    EXPECT_EQ(d->block, 12345u);
  }
  for (uint64_t tag : {0x00, 0xA4, 0xAA, 0xFF})
    EXPECT_FALSE(wire::DecodePush(tag << 56).ok()) << tag;
}

TEST(PushWord, CreditRoundTrips) {
  wire::CreditImm c{513, 7, Status::Code::kInvalidArgument, 70000};
  wire::CreditImm d = wire::DecodeCredit(wire::EncodeCredit(c));
  EXPECT_EQ(d.pserver, 513u);
  EXPECT_EQ(d.slot, 7u);
  EXPECT_EQ(d.code, Status::Code::kInvalidArgument);
  EXPECT_EQ(d.block, 70000u);
}

// Little-endian bytes as hex, for comparing with the format page.
std::string Hex(const void* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; i++) {
    const auto b = static_cast<const unsigned char*>(data)[i];
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

class SlotCodecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto l = Layout::Build({{"emb", DType::kFloat32, {10, 4}}}, 16, 1);
    ASSERT_TRUE(l.ok());
    layout_ = std::make_unique<Layout>(std::move(*l));
    ASSERT_EQ(layout_->num_blocks(), 3u);  // rows 0-3, 4-7, 8-9
    block_ = layout_->blocks()[1];
    bytes_ = RowsSlotBytesForBlock(block_, 4);
    slot_.assign(bytes_ / 8 + 8, 0);
  }
  // Writes a header claiming (kind, block, count) and parses it as a word
  // of kind `word` for block_ announced it.
  Result<RowsSlot> Lie(uint32_t kind, uint32_t block, uint64_t count,
                       PushKind word) {
    RowsHeader h{kind, block, count};
    std::memcpy(slot_.data(), &h, sizeof(h));
    return ParseRowsSlot(slot_.data(), bytes_, word, block_, 4);
  }
  std::unique_ptr<Layout> layout_;
  BlockInfo block_;
  size_t bytes_ = 0;
  std::vector<uint64_t> slot_;
};

TEST_F(SlotCodecTest, EncodersWriteTheDocumentedBytes) {
  const uint64_t ids[2] = {5, 4};
  EXPECT_EQ(EncodeRowsSlot(slot_.data(), PushKind::kRows, 1, 99, ids, 2), 32u);
  EXPECT_EQ(Hex(slot_.data(), 32),
            "a600000001000000"
            "0200000000000000"
            "0500000000000000"
            "0400000000000000");
  EXPECT_EQ(EncodeRowsSlot(slot_.data(), PushKind::kRowsRead, 1, 99, ids, 1),
            24u);
  EXPECT_EQ(Hex(slot_.data(), 24),
            "a700000001000000"
            "0100000000000000"
            "0500000000000000");
  EXPECT_EQ(EncodeRowsSlot(slot_.data(), PushKind::kRowsStep, 1, 77, ids, 2),
            40u);
  EXPECT_EQ(Hex(slot_.data(), 40),
            "a900000001000000"
            "4d00000000000000"
            "0200000000000000"
            "0500000000000000"
            "0400000000000000");
  EncodeDenseStepHeader(slot_.data(), 258, 0x0102030405060708);
  EXPECT_EQ(Hex(slot_.data(), kStepHeaderBytes),
            "a800000002010000"
            "0807060504030201");
  EXPECT_EQ(RowsSlotBytes(PushKind::kRows, 2, 16), 64u);
  EXPECT_EQ(RowsSlotBytes(PushKind::kRowsStep, 2, 16), 72u);
  EXPECT_EQ(RowsSlotBytesForBlock(block_, 4), 16u + 4 * (8 + 16));
}

TEST_F(SlotCodecTest, ParsersReadWhatTheEncodersWrote) {
  const uint64_t ids[3] = {7, 4, 7};
  const float rows[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  for (PushKind kind :
       {PushKind::kRows, PushKind::kRowsRead, PushKind::kRowsStep}) {
    SCOPED_TRACE(static_cast<int>(kind));
    // A sync pserver's slot holds the step header on top.
    const size_t bytes =
        bytes_ + (kind == PushKind::kRowsStep ? kStepHeaderBytes : 0);
    char* at = reinterpret_cast<char*>(slot_.data());
    const size_t values = EncodeRowsSlot(at, kind, 1, 41, ids, 3);
    std::memcpy(at + values, rows, sizeof(rows));
    auto r = ParseRowsSlot(at, bytes, kind, block_, 4);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->count, 3u);
    EXPECT_EQ(r->step, kind == PushKind::kRowsStep ? 41u : 0u);
    EXPECT_EQ(r->values_offset, values);
    EXPECT_EQ(r->values_offset, RowsValuesOffset(kind, 3));
    uint64_t id1 = 0;
    std::memcpy(&id1, at + r->ids_offset + 8, 8);
    EXPECT_EQ(id1, 4u);
    if (kind == PushKind::kRowsRead) continue;
    // The rows of a push are the sparse-rows format at sparse_offset.
    auto sparse =
        ParseSparseRows(at + r->sparse_offset, r->sparse_bytes(16), block_, 4);
    ASSERT_TRUE(sparse.ok()) << sparse.status().ToString();
    EXPECT_EQ(sparse->num_rows, 3u);
    EXPECT_EQ(sparse->row_ids[2], 7u);
    EXPECT_EQ(static_cast<const float*>(sparse->values)[11], 12.0f);
  }
  EncodeDenseStepHeader(slot_.data(), 1, 1234);
  auto step = ParseDenseStepHeader(slot_.data(), bytes_, 1);
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ(*step, 1234u);
}

TEST_F(SlotCodecTest, RowsHeaderMustAgreeWithTheWordAndFitTheSlot) {
  const uint32_t rows = static_cast<uint32_t>(PushKind::kRows);
  const uint32_t read = static_cast<uint32_t>(PushKind::kRowsRead);
  EXPECT_TRUE(Lie(rows, 1, 1, PushKind::kRows).ok());
  EXPECT_TRUE(Lie(rows, 1, 4, PushKind::kRows).ok());  // every row once
  EXPECT_TRUE(Lie(read, 1, 4, PushKind::kRowsRead).ok());
  EXPECT_FALSE(Lie(read, 1, 1, PushKind::kRows).ok());             // kind lies
  EXPECT_FALSE(Lie(rows, 2, 1, PushKind::kRows).ok());             // block lies
  EXPECT_FALSE(Lie(rows, 1, 0, PushKind::kRows).ok());             // no rows
  EXPECT_FALSE(Lie(rows, 1, 5, PushKind::kRows).ok());             // too many
  EXPECT_FALSE(Lie(rows, 1, ~uint64_t{0}, PushKind::kRows).ok());  // overflow
  EXPECT_FALSE(Lie(rows, 1, uint64_t{1} << 61, PushKind::kRows).ok());
  Status s = Lie(rows, 1, 5, PushKind::kRows).status();
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("block 1"), std::string::npos) << s.ToString();
  EXPECT_FALSE(ParseRowsSlot(slot_.data(), kRowsHeaderBytes - 1,
                             PushKind::kRows, block_, 4)
                   .ok());
}

// A sync step's rows (0xA9): the step header must agree with the word,
// 0 rows is valid (an empty share of the step), more than fit is refused.
TEST_F(SlotCodecTest, StepRowsHeaderMustAgreeWithTheWordAndFitTheSlot) {
  const size_t bytes = bytes_ + kStepHeaderBytes;
  auto parse = [&](uint32_t kind, uint32_t block, uint64_t step,
                   uint64_t count) {
    StepHeader h{kind, block, step};
    std::memcpy(slot_.data(), &h, sizeof(h));
    std::memcpy(slot_.data() + 2, &count, 8);
    return ParseRowsSlot(slot_.data(), bytes, PushKind::kRowsStep, block_, 4);
  };
  const uint32_t step_rows = static_cast<uint32_t>(PushKind::kRowsStep);
  auto ok = parse(step_rows, 1, 77, 0);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->step, 77u);
  EXPECT_EQ(ok->count, 0u);
  ok = parse(step_rows, 1, 5, 4);  // every row of the block once
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->count, 4u);
  const uint32_t dense_step = static_cast<uint32_t>(PushKind::kDenseStep);
  EXPECT_EQ(parse(dense_step, 1, 5, 1).status().code(),
            Status::Code::kCorruption);  // kind lies
  EXPECT_EQ(parse(step_rows, 2, 5, 1).status().code(),
            Status::Code::kCorruption);  // block lies
  for (uint64_t count : {uint64_t{5}, ~uint64_t{0}, uint64_t{1} << 61}) {
    Status s = parse(step_rows, 1, 5, count).status();
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << count;
    EXPECT_NE(s.message().find("block 1"), std::string::npos) << s.ToString();
  }
  EXPECT_FALSE(ParseRowsSlot(slot_.data(),
                             RowsIdsOffset(PushKind::kRowsStep) - 1,
                             PushKind::kRowsStep, block_, 4)
                   .ok());
}

TEST_F(SlotCodecTest, DenseStepHeaderMustAgreeWithTheWord) {
  EncodeDenseStepHeader(slot_.data(), 1, 9);
  EXPECT_EQ(ParseDenseStepHeader(slot_.data(), bytes_, 2).status().code(),
            Status::Code::kCorruption);
  EXPECT_EQ(ParseDenseStepHeader(slot_.data(), kStepHeaderBytes - 1, 1)
                .status()
                .code(),
            Status::Code::kCorruption);
  EncodeRowsSlot(slot_.data(), PushKind::kRowsStep, 1, 9, nullptr, 0);
  Status s = ParseDenseStepHeader(slot_.data(), bytes_, 1).status();
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("says kind 169 block 1"), std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace fabps::protocol
