// A rows read's answer (pserver/gather_rows.h): the right rows, ids outside
// the block refused.
#include "pserver/gather_rows.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace fabps::pserver {
namespace {

class GatherRowsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto l = Layout::Build({{"emb", DType::kFloat32, {10, 4}}}, 16, 1);
    ASSERT_TRUE(l.ok());
    layout_ = std::make_unique<Layout>(std::move(*l));
    ASSERT_EQ(layout_->num_blocks(), 3u);  // rows 0-3, 4-7, 8-9
    block_ = layout_->blocks()[1];
  }
  std::unique_ptr<Layout> layout_;
  BlockInfo block_;
};

TEST_F(GatherRowsTest, GatherCopiesRowsAndRefusesOthers) {
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
