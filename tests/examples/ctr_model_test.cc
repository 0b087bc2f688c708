// The CTR example's parts in process: the MLP's backward pass against
// finite differences (of the loss in double, through float parameters),
// AUC on known cases, the record format's round trip and refusals, and the
// planted model's determinism, Zipf frequencies and 64-bit feature ids.
#include "examples/ctr/ctr_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "examples/ctr/auc.h"
#include "examples/ctr/ctr_record.h"
#include "examples/ctr/planted_model.h"

namespace fabps {
namespace {

using examples::ctr::CtrMlp;
using examples::ctr::CtrMlpParams;
using examples::ctr::Matrix;

TEST(CtrMlp, GradientsMatchFiniteDifferences) {
  const int fields = 2, hidden = 5, batch = 6;
  CtrMlpParams p(fields, hidden), g(fields, hidden);
  examples::ctr::InitCtrMlp(7, &p);
  for (float& b : p.tensors[1].values) b = 0.3f;  // keep most ReLUs open
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  Matrix x(batch, p.inputs);
  for (int i = 0; i < x.size(); i++) x.data()[i] = u(rng);
  std::vector<int> labels = {0, 1, 1, 0, 1, 0};
  CtrMlp mlp;
  Matrix dx;
  mlp.LossAndGradients(p, x, labels, &g, &dx);
  ASSERT_EQ(dx.rows(), batch);
  ASSERT_EQ(dx.cols(), p.inputs);
  const float h = 3e-3f;  // small enough not to cross ReLU kinks here
  auto loss = [&](const CtrMlpParams& q, const Matrix& in) {
    CtrMlpParams unused(fields, hidden);
    Matrix unused_dx;
    return static_cast<double>(
        mlp.LossAndGradients(q, in, labels, &unused, &unused_dx));
  };
  for (int t = 0; t < 4; t++) {
    for (size_t i = 0; i < p.tensors[t].values.size(); i++) {
      CtrMlpParams plus = p, minus = p;
      plus.tensors[t].values[i] += h;
      minus.tensors[t].values[i] -= h;
      double numeric = (loss(plus, x) - loss(minus, x)) / (2 * h);
      EXPECT_NEAR(g.tensors[t].values[i], numeric, 2e-3)
          << p.tensors[t].name << "[" << i << "]";
    }
  }
  for (int i = 0; i < x.size(); i += 3) {
    Matrix plus = x, minus = x;
    plus.data()[i] += h;
    minus.data()[i] -= h;
    double numeric = (loss(p, plus) - loss(p, minus)) / (2 * h);
    EXPECT_NEAR(dx.data()[i], numeric, 2e-3) << "x[" << i << "]";
  }
}

TEST(Auc, KnownCases) {
  EXPECT_DOUBLE_EQ(examples::ctr::Auc({0.1, 0.2, 0.8, 0.9}, {0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(examples::ctr::Auc({0.9, 0.8, 0.2, 0.1}, {0, 0, 1, 1}), 0.0);
  EXPECT_DOUBLE_EQ(examples::ctr::Auc({0.5, 0.5, 0.5, 0.5}, {0, 1, 0, 1}), 0.5);
  // Pairs (pos, neg): (0.4 > 0.1), (0.4 < 0.6), (0.7 > 0.1), (0.7 > 0.6).
  EXPECT_DOUBLE_EQ(examples::ctr::Auc({0.1, 0.4, 0.6, 0.7}, {0, 1, 0, 1}),
                   0.75);
  // A tie between a positive and a negative counts one half.
  EXPECT_DOUBLE_EQ(examples::ctr::Auc({0.3, 0.3, 0.9}, {0, 1, 1}), 0.75);
  EXPECT_TRUE(std::isnan(examples::ctr::Auc({0.1, 0.2}, {1, 1})));
}

TEST(CtrRecord, RoundTripAndRefusals) {
  const uint64_t ids[3] = {1, 0xfedcba9876543210ULL, 42};
  std::string r;
  examples::ctr::AppendCtrRecord(1, ids, 3, &r);
  ASSERT_EQ(r.size(), examples::ctr::CtrRecordBytes(3));
  int label = -1;
  uint64_t got[3];
  ASSERT_TRUE(examples::ctr::ParseCtrRecord(r, 3, &label, got));
  EXPECT_EQ(label, 1);
  for (int i = 0; i < 3; i++) EXPECT_EQ(got[i], ids[i]);
  EXPECT_FALSE(examples::ctr::ParseCtrRecord(r, 2, &label, got)) << "other F";
  EXPECT_FALSE(examples::ctr::ParseCtrRecord(r.substr(1), 3, &label, got))
      << "short";
  std::string bad_label = r;
  bad_label[0] = 2;
  EXPECT_FALSE(examples::ctr::ParseCtrRecord(bad_label, 3, &label, got));
  std::string lying_count = r;
  lying_count[1] = 4;
  EXPECT_FALSE(examples::ctr::ParseCtrRecord(lying_count, 3, &label, got));
  EXPECT_EQ(examples::ctr::FeatureRow(ids[1], 1000),
            static_cast<int64_t>(ids[1] % 1000));
}

TEST(PlantedModel, DeterministicWithZipfFrequencies) {
  examples::ctr::PlantedModelOptions o;
  o.fields = 2;
  o.vocab = 1000;
  o.zipf = 1.1;
  examples::ctr::PlantedModel a(o), b(o);
  std::mt19937_64 ra(5), rb(5);
  examples::ctr::Impression x, y;
  int head = 0, clicks = 0;
  const int n = 20000;
  for (int i = 0; i < n; i++) {
    a.Sample(ra, &x);
    b.Sample(rb, &y);
    ASSERT_EQ(x.ids, y.ids);
    ASSERT_EQ(x.label, y.label);
    head += x.ids[0] == a.FeatureId(0, 0);
    clicks += x.label;
  }
  // P(rank 0) = 1 / H(1000, 1.1), about 0.15.
  double h = 0;
  for (int k = 1; k <= 1000; k++) h += std::pow(k, -1.1);
  EXPECT_NEAR(head / double(n), 1 / h, 0.02);
  EXPECT_GT(clicks, 0);
  EXPECT_LT(clicks, n);
  EXPECT_NE(a.FeatureId(0, 1), a.FeatureId(1, 1)) << "fields hash apart";
}

// The hashed table keys rows by the ids themselves: they must use the whole
// 64-bit id space (the tables are meant for ids of at least 40 bits), not
// only small numbers. 16000 ids: about half have the top bit set (negative
// as the int64 the trainer passes), and all are distinct.
TEST(PlantedModel, FeatureIdsSpanThe64BitIdSpace) {
  examples::ctr::PlantedModelOptions o;
  o.fields = 8;
  o.vocab = 2000;
  examples::ctr::PlantedModel m(o);
  std::set<uint64_t> ids;
  int top_bit = 0, above_2_40 = 0;
  for (int f = 0; f < o.fields; f++) {
    for (int k = 0; k < o.vocab; k++) {
      uint64_t id = m.FeatureId(f, k);
      ids.insert(id);
      top_bit += id >> 63;
      above_2_40 += id >= (uint64_t{1} << 40);
    }
  }
  const int n = o.fields * o.vocab;
  EXPECT_EQ(ids.size(), static_cast<size_t>(n));
  EXPECT_NEAR(top_bit / double(n), 0.5, 0.03);
  EXPECT_GE(above_2_40, n - 2);
}

}  // namespace
}  // namespace fabps
