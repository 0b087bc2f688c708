// The Fashion-MNIST example's model and data handling, in process: the
// backward pass against float64 finite differences, local SGD lowering the
// loss, deterministic initialization and record parsing (the metrics lines:
// tests/trainer/metrics_line_test.cc).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "examples/fashion_mnist/fashion_data.h"
#include "examples/fashion_mnist/mlp.h"
#include "recordio/writer.h"
#include "tests/util/subprocess.h"

namespace fabps::examples::fashion_mnist {
namespace {

// A batch of `n` inputs uniform in [0, 1] with random labels.
template <typename S>
void RandomBatch(int n, uint32_t seed, typename Mlp<S>::Matrix* x,
                 std::vector<int>* labels) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> pixel(0.0, 1.0);
  x->resize(n, kPixels);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < kPixels; ++c) (*x)(r, c) = static_cast<S>(pixel(rng));
  }
  labels->clear();
  for (int r = 0; r < n; ++r) labels->push_back(static_cast<int>(rng() % 10));
}

// Small random biases, so the forward pass depends on them too.
template <typename S>
void RandomizeBiases(uint32_t seed, MlpParams<S>* p) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-0.1, 0.1);
  for (int i = 1; i < kNumTensors; i += 2) {
    for (S& b : p->tensors[i]) b = static_cast<S>(u(rng));
  }
}

TEST(FashionMnistModelTest, GradientsMatchFiniteDifferences) {
  MlpParams<double> params, grads;
  InitMlpParams(7, &params);
  RandomizeBiases(8, &params);
  Mlp<double>::Matrix x;
  std::vector<int> labels;
  RandomBatch<double>(3, 9, &x, &labels);
  Mlp<double> mlp;
  double loss = mlp.LossAndGradients(params, x, labels, &grads);
  ASSERT_TRUE(std::isfinite(loss));

  // Central differences on up to 60 entries of every tensor (all of the
  // small ones). A sampled entry sitting on a ReLU kink would be off, but
  // with eps 1e-6 that needs a pre-activation within 1e-6 of zero.
  const double eps = 1e-6;
  std::mt19937 rng(10);
  double worst = 0;
  int checked = 0, nonzero = 0;
  for (int t = 0; t < kNumTensors; ++t) {
    std::vector<double>& v = params.tensors[t];
    std::vector<size_t> idx;
    if (v.size() <= 60) {
      for (size_t i = 0; i < v.size(); ++i) idx.push_back(i);
    } else {
      for (int k = 0; k < 60; ++k) idx.push_back(rng() % v.size());
    }
    for (size_t i : idx) {
      double saved = v[i];
      Mlp<double> probe;
      MlpParams<double> unused;
      v[i] = saved + eps;
      double up = probe.LossAndGradients(params, x, labels, &unused);
      v[i] = saved - eps;
      double down = probe.LossAndGradients(params, x, labels, &unused);
      v[i] = saved;
      double numeric = (up - down) / (2 * eps);
      double analytic = grads.tensors[t][i];
      double diff = std::abs(numeric - analytic);
      ++checked;
      if (std::abs(analytic) > 1e-9) ++nonzero;  // else a dead ReLU unit
      // Relative, with a floor for entries whose gradient is (near) zero.
      double rel =
          diff / std::max(std::abs(numeric) + std::abs(analytic), 1e-7);
      worst = std::max(worst, rel);
      EXPECT_LT(rel, 1e-4) << MlpTensorShapes()[t].name << "[" << i
                           << "]: analytic " << analytic << ", numeric "
                           << numeric;
    }
  }
  EXPECT_GT(nonzero, checked / 3) << "too few informative entries";
  std::printf("checked %d entries (%d non-zero), worst relative error %.3g\n",
              checked, nonzero, worst);
}

TEST(FashionMnistModelTest, FloatGradientsMatchDouble) {
  MlpParams<double> pd, gd;
  MlpParams<float> pf, gf;
  InitMlpParams(3, &pd);
  InitMlpParams(3, &pf);
  Mlp<double>::Matrix xd;
  std::vector<int> labels;
  RandomBatch<double>(16, 4, &xd, &labels);
  Mlp<float>::Matrix xf = xd.cast<float>();
  Mlp<double> md;
  Mlp<float> mf;
  double ld = md.LossAndGradients(pd, xd, labels, &gd);
  float lf = mf.LossAndGradients(pf, xf, labels, &gf);
  EXPECT_NEAR(ld, lf, 1e-4 * std::abs(ld));
  for (int t = 0; t < kNumTensors; ++t) {
    double num = 0, den = 0;
    for (size_t i = 0; i < gd.tensors[t].size(); ++i) {
      double d = gd.tensors[t][i] - gf.tensors[t][i];
      num += d * d;
      den += gd.tensors[t][i] * gd.tensors[t][i];
    }
    EXPECT_LT(std::sqrt(num / den), 1e-3) << MlpTensorShapes()[t].name;
  }
}

// The hooks a trainer overlaps its transfers with: each layer's tensors are
// asked for in forward order before they are read (a hook that changes
// them changes the result), and each layer's gradients are final when
// announced, in backward order.
TEST(FashionMnistModelTest, LayerHooksComeInOrderAtTheRightTime) {
  MlpParams<float> params, fresh, grads, plain;
  InitMlpParams(2, &params);
  InitMlpParams(7, &fresh);
  Mlp<float>::Matrix x;
  std::vector<int> labels;
  RandomBatch<float>(8, 6, &x, &labels);
  Mlp<float> mlp;
  const float expected = mlp.LossAndGradients(fresh, x, labels, &plain);

  std::vector<std::string> calls;
  std::array<std::vector<float>, kNumTensors> at_ready;
  LayerHooks hooks;
  hooks.before_layer = [&](int layer) {
    calls.push_back("before " + std::to_string(layer));
    // The values "arrive" only now, as an overlapped pull's would.
    params.tensors[2 * layer] = fresh.tensors[2 * layer];
    params.tensors[2 * layer + 1] = fresh.tensors[2 * layer + 1];
  };
  hooks.grads_ready = [&](int layer) {
    calls.push_back("ready " + std::to_string(layer));
    at_ready[2 * layer] = grads.tensors[2 * layer];
    at_ready[2 * layer + 1] = grads.tensors[2 * layer + 1];
  };
  const float loss = mlp.LossAndGradients(params, x, labels, &grads, &hooks);
  EXPECT_EQ(calls, (std::vector<std::string>{"before 0", "before 1", "before 2",
                                             "ready 2", "ready 1", "ready 0"}));
  EXPECT_EQ(loss, expected);
  for (int t = 0; t < kNumTensors; ++t) {
    EXPECT_EQ(at_ready[t], grads.tensors[t]) << MlpTensorShapes()[t].name;
    EXPECT_EQ(grads.tensors[t], plain.tensors[t]) << MlpTensorShapes()[t].name;
  }
}

TEST(FashionMnistModelTest, LocalSgdLowersTheLossOnAFixedBatch) {
  MlpParams<float> params, grads;
  InitMlpParams(1, &params);
  Mlp<float>::Matrix x;
  std::vector<int> labels;
  RandomBatch<float>(32, 5, &x, &labels);
  Mlp<float> mlp;
  const float lr = 0.1f;
  float first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    last = mlp.LossAndGradients(params, x, labels, &grads);
    if (step == 0) first = last;
    for (int t = 0; t < kNumTensors; ++t) {
      for (size_t i = 0; i < params.tensors[t].size(); ++i) {
        params.tensors[t][i] -= lr * grads.tensors[t][i];
      }
    }
  }
  // Random labels: only memorization can lower it, which a 235k-parameter
  // MLP does easily on 32 examples.
  EXPECT_GT(first, 1.5f);  // about ln 10 at the start
  EXPECT_LT(last, 0.25f * first) << "first " << first << ", last " << last;
  int64_t correct = 0;
  mlp.Evaluate(params, x, labels, &correct);
  EXPECT_GE(correct, 28);
}

TEST(FashionMnistModelTest, InitializationIsDeterministicAndScaled) {
  MlpParams<float> a, b, c;
  InitMlpParams(42, &a);
  InitMlpParams(42, &b);
  InitMlpParams(43, &c);
  EXPECT_EQ(a.tensors, b.tensors);
  EXPECT_NE(a.tensors[0], c.tensors[0]);
  EXPECT_EQ(a.total_elements(),
            784u * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  // He: std sqrt(2/784) for fc1.w; biases zero; Glorot bound for fc3.w.
  double sum2 = 0;
  for (float w : a.tensors[0]) sum2 += double{w} * w;
  double stddev = std::sqrt(sum2 / a.tensors[0].size());
  EXPECT_NEAR(stddev, std::sqrt(2.0 / 784), 0.01 * std::sqrt(2.0 / 784));
  for (float v : a.tensors[1]) EXPECT_EQ(v, 0.0f);
  float bound = std::sqrt(6.0f / (128 + 10));
  for (float w : a.tensors[4]) EXPECT_LE(std::abs(w), bound);
}

std::string Record(int label, size_t pixels, uint8_t value) {
  std::string r(1 + pixels, static_cast<char>(value));
  r[0] = static_cast<char>(label);
  return r;
}

TEST(FashionMnistDataTest, ParseRecordChecksLengthAndLabel) {
  std::vector<float> px(kPixels, -1.0f);
  int label = -1;
  EXPECT_TRUE(ParseRecord(Record(9, kPixels, 255), px.data(), &label));
  EXPECT_EQ(label, 9);
  EXPECT_EQ(px[0], 1.0f);
  EXPECT_EQ(px[kPixels - 1], 1.0f);
  EXPECT_TRUE(ParseRecord(Record(0, kPixels, 0), px.data(), &label));
  EXPECT_EQ(px[5], 0.0f);

  px.assign(kPixels, -1.0f);
  label = -1;
  EXPECT_FALSE(ParseRecord(Record(10, kPixels, 1), px.data(), &label));
  EXPECT_FALSE(ParseRecord(Record(255, kPixels, 1), px.data(), &label));
  EXPECT_FALSE(ParseRecord(Record(1, kPixels - 1, 1), px.data(), &label));
  EXPECT_FALSE(ParseRecord(Record(1, kPixels + 1, 1), px.data(), &label));
  EXPECT_FALSE(ParseRecord("", px.data(), &label));
  EXPECT_EQ(label, -1);
  EXPECT_EQ(px[0], -1.0f);  // nothing written for a bad record
}

TEST(FashionMnistDataTest, LoadsShardsSkipsBadRecordsAndEvaluates) {
  testing::TempDir dir;
  for (int shard = 0; shard < 2; ++shard) {
    auto w =
        recordio::Writer::Create(dir.File("test-" + std::to_string(shard)));
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE((*w)->Append(Record(i, kPixels, 100)).ok());
    }
    ASSERT_TRUE((*w)->Append(Record(11, kPixels, 1)).ok());  // bad label
    ASSERT_TRUE((*w)->Append(Record(1, 100, 1)).ok());       // bad length
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto files = ExpandDataFiles(dir.path());
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(files->size(), 2u);
  auto globbed = ExpandDataFiles(dir.File("test-1*"));
  ASSERT_TRUE(globbed.ok());
  EXPECT_EQ(globbed->size(), 1u);
  EXPECT_FALSE(ExpandDataFiles(dir.File("nothing-*")).ok());

  auto data = LoadLabeledImages(*files);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->labels.size(), 10u);
  EXPECT_EQ(data->x.rows(), 10);
  EXPECT_EQ(data->bad_records, 4);
  EXPECT_FLOAT_EQ(data->x(3, 17), 100.0f / 255.0f);

  MlpParams<float> params;  // all zero: uniform softmax, arg-max is class 0
  Mlp<float> mlp;
  Evaluation e = EvaluateModel(params, *data, 3, &mlp);
  EXPECT_NEAR(e.accuracy, 0.2, 1e-9);  // the two examples of class 0
  EXPECT_NEAR(e.loss, std::log(10.0), 1e-5);
}

}  // namespace
}  // namespace fabps::examples::fashion_mnist
