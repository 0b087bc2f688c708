// The rows-in-a-slot checks (pserver/rows_slot.h) and the push word's kinds
// (pserver/wire.h): every lie a header can tell is refused, reads gather the
// right rows and refuse ids outside the block.
#include "pserver/rows_slot.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace fabps::pserver {
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

class RowsSlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto l = Layout::Build({{"emb", DType::kFloat32, {10, 4}}}, 16, 1);
    ASSERT_TRUE(l.ok());
    layout_ = std::make_unique<Layout>(std::move(*l));
    ASSERT_EQ(layout_->num_blocks(), 3u);  // rows 0-3, 4-7, 8-9
    block_ = layout_->blocks()[1];
    slot_.assign(RowsSlotBytesForBlock(block_, 4) / 8 + 1, 0);
  }
  Result<wire::RowsHeader> Parse(uint32_t kind, uint32_t block, uint64_t count,
                                 PushKind word = PushKind::kRows) {
    wire::RowsHeader h{kind, block, count};
    std::memcpy(slot_.data(), &h, sizeof(h));
    return ParseRowsHeader(slot_.data(), RowsSlotBytesForBlock(block_, 4), word,
                           block_, 4);
  }
  std::unique_ptr<Layout> layout_;
  BlockInfo block_;
  std::vector<uint64_t> slot_;
};

TEST_F(RowsSlotTest, HeaderMustAgreeWithTheWordAndFitTheSlot) {
  const uint32_t rows = static_cast<uint32_t>(PushKind::kRows);
  const uint32_t read = static_cast<uint32_t>(PushKind::kRowsRead);
  EXPECT_TRUE(Parse(rows, 1, 1).ok());
  EXPECT_TRUE(Parse(rows, 1, 4).ok());  // every row of the block once
  EXPECT_TRUE(Parse(read, 1, 4, PushKind::kRowsRead).ok());
  EXPECT_FALSE(Parse(read, 1, 1).ok());                  // kind lies
  EXPECT_FALSE(Parse(rows, 2, 1).ok());                  // block lies
  EXPECT_FALSE(Parse(rows, 1, 0).ok());                  // no rows
  EXPECT_FALSE(Parse(rows, 1, 5).ok());                  // too many
  EXPECT_FALSE(Parse(rows, 1, ~uint64_t{0}).ok());       // overflow
  EXPECT_FALSE(Parse(rows, 1, uint64_t{1} << 61).ok());  // overflow
  Status s = Parse(rows, 1, 5).status();
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("block 1"), std::string::npos) << s.ToString();
}

// A sync step's rows (0xA9): the step header must agree with the word,
// 0 rows is valid (an empty share of the step), more than fit is refused.
TEST_F(RowsSlotTest, StepRowsHeaderMustAgreeWithTheWordAndFitTheSlot) {
  // A sync pserver's slot: the step header on top of every row once.
  const size_t bytes =
      RowsSlotBytesForBlock(block_, 4) + wire::kStepHeaderBytes;
  std::vector<uint64_t> slot(bytes / 8 + 1, 0);
  auto parse = [&](uint32_t kind, uint32_t block, uint64_t step,
                   uint64_t count) {
    wire::StepHeader h{kind, block, step};
    std::memcpy(slot.data(), &h, sizeof(h));
    std::memcpy(slot.data() + 2, &count, 8);
    return ParseStepRowsHeader(slot.data(), bytes, block_, 4);
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
  EXPECT_FALSE(
      ParseStepRowsHeader(slot.data(), wire::kStepRowsIdsOffset - 1, block_, 4)
          .ok());
}

TEST_F(RowsSlotTest, GatherCopiesRowsAndRefusesOthers) {
  std::vector<float> values(block_.num_elements);
  for (size_t i = 0; i < values.size(); i++) values[i] = static_cast<float>(i);
  BlockView v;
  v.info = &block_;
  v.dtype = DType::kFloat32;
  v.values = values.data();
  const uint64_t ids[3] = {7, 4, 7};
  std::vector<float> out(12, -1);
  ASSERT_TRUE(GatherRows(v, ids, 3, out.data()).ok());
  for (int k = 0; k < 4; k++) {
    EXPECT_EQ(out[k], 12 + k);      // row 7 = local row 3
    EXPECT_EQ(out[4 + k], 0 + k);   // row 4 = local row 0
    EXPECT_EQ(out[8 + k], 12 + k);  // row 7 again
  }
  for (uint64_t bad : {uint64_t{3}, uint64_t{8}, ~uint64_t{0}}) {
    Status s = GatherRows(v, &bad, 1, out.data());
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace fabps::pserver
