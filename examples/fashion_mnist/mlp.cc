#include "examples/fashion_mnist/mlp.h"

#include <cmath>

#include "base/check.h"

namespace fabps::examples::fashion_mnist {
namespace {

// splitmix64: a small generator with a fixed, documented output sequence.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): 53 random bits, never exactly 0.
  double Uniform() { return ((Next() >> 11) + 0.5) * 0x1.0p-53; }
  // Standard normal by Box-Muller (one of the pair).
  double Normal() {
    double u1 = Uniform(), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  uint64_t state_;
};

template <typename S>
using Matrix = typename Mlp<S>::Matrix;
template <typename S>
using ConstMap = Eigen::Map<const Matrix<S>>;
template <typename S>
using MutMap = Eigen::Map<Matrix<S>>;
template <typename S>
using RowVector = Eigen::Matrix<S, 1, Eigen::Dynamic>;
template <typename S>
using ConstRowMap = Eigen::Map<const RowVector<S>>;
template <typename S>
using MutRowMap = Eigen::Map<RowVector<S>>;

template <typename S>
ConstMap<S> Weights(const MlpParams<S>& p, int i) {
  const TensorShape& t = MlpTensorShapes()[i];
  return ConstMap<S>(p.tensors[i].data(), t.rows, t.cols);
}
template <typename S>
ConstRowMap<S> Bias(const MlpParams<S>& p, int i) {
  return ConstRowMap<S>(p.tensors[i].data(), MlpTensorShapes()[i].rows);
}
template <typename S>
MutMap<S> Weights(MlpParams<S>* p, int i) {
  const TensorShape& t = MlpTensorShapes()[i];
  return MutMap<S>(p->tensors[i].data(), t.rows, t.cols);
}
template <typename S>
MutRowMap<S> Bias(MlpParams<S>* p, int i) {
  return MutRowMap<S>(p->tensors[i].data(), MlpTensorShapes()[i].rows);
}

}  // namespace

const std::array<TensorShape, kNumTensors>& MlpTensorShapes() {
  static const std::array<TensorShape, kNumTensors> shapes = {{
      {"fc1.w", kPixels, kHidden1},
      {"fc1.b", kHidden1, 0},
      {"fc2.w", kHidden1, kHidden2},
      {"fc2.b", kHidden2, 0},
      {"fc3.w", kHidden2, kClasses},
      {"fc3.b", kClasses, 0},
  }};
  return shapes;
}

template <typename S>
MlpParams<S>::MlpParams() {
  for (int i = 0; i < kNumTensors; ++i) {
    tensors[i].assign(MlpTensorShapes()[i].elements(), S(0));
  }
}

template <typename S>
size_t MlpParams<S>::total_elements() const {
  size_t n = 0;
  for (const auto& t : tensors) n += t.size();
  return n;
}

template <typename S>
void InitMlpParams(uint64_t seed, MlpParams<S>* params) {
  SplitMix64 rng(seed);
  for (int i = 0; i < kNumTensors; ++i) {
    const TensorShape& t = MlpTensorShapes()[i];
    std::vector<S>& v = params->tensors[i];
    v.assign(t.elements(), S(0));
    if (t.cols == 0) continue;  // biases start at zero
    bool output_layer = (i == kNumTensors - 2);
    if (output_layer) {
      double limit = std::sqrt(6.0 / (t.rows + t.cols));
      for (S& x : v) x = static_cast<S>((2.0 * rng.Uniform() - 1.0) * limit);
    } else {
      double stddev = std::sqrt(2.0 / t.rows);
      for (S& x : v) x = static_cast<S>(rng.Normal() * stddev);
    }
  }
}

template <typename S>
S Mlp<S>::Forward(const MlpParams<S>& p, const Matrix& x,
                  const std::vector<int>& labels, int64_t* correct,
                  const LayerHooks* hooks) {
  auto before = [hooks](int layer) {
    if (hooks != nullptr && hooks->before_layer) hooks->before_layer(layer);
  };
  FABPS_CHECK_MSG(x.cols() == kPixels && x.rows() > 0 &&
                      static_cast<size_t>(x.rows()) == labels.size(),
                  "batch " << x.rows() << "x" << x.cols() << ", "
                           << labels.size() << " labels");
  before(0);
  h1_.noalias() = x * Weights(p, 0);
  h1_.rowwise() += Bias(p, 1);
  h1_ = h1_.cwiseMax(S(0));
  before(1);
  h2_.noalias() = h1_ * Weights(p, 2);
  h2_.rowwise() += Bias(p, 3);
  h2_ = h2_.cwiseMax(S(0));
  before(2);
  probs_.noalias() = h2_ * Weights(p, 4);
  probs_.rowwise() += Bias(p, 5);
  // Softmax row by row, shifted by the row maximum so exp cannot overflow;
  // the loss is log(sum exp(z - max)) - (z_label - max).
  S loss = 0;
  for (Eigen::Index r = 0; r < probs_.rows(); ++r) {
    int label = labels[r];
    FABPS_CHECK_MSG(label >= 0 && label < kClasses, "label " << label);
    Eigen::Index best;
    S max = probs_.row(r).maxCoeff(&best);
    if (correct != nullptr && best == label) ++*correct;
    S shifted_label_logit = probs_(r, label) - max;
    probs_.row(r).array() = (probs_.row(r).array() - max).exp();
    S sum = probs_.row(r).sum();
    loss += std::log(sum) - shifted_label_logit;
    probs_.row(r) /= sum;
  }
  return loss;
}

template <typename S>
S Mlp<S>::LossAndGradients(const MlpParams<S>& p, const Matrix& x,
                           const std::vector<int>& labels, MlpParams<S>* grads,
                           const LayerHooks* hooks) {
  auto ready = [hooks](int layer) {
    if (hooks != nullptr && hooks->grads_ready) hooks->grads_ready(layer);
  };
  const S loss = Forward(p, x, labels, nullptr, hooks);
  const S inv_batch = S(1) / static_cast<S>(x.rows());
  // d(mean loss)/d logits = (softmax - one_hot) / batch, built in probs_.
  for (Eigen::Index r = 0; r < probs_.rows(); ++r) probs_(r, labels[r]) -= 1;
  probs_ *= inv_batch;
  Weights(grads, 4).noalias() = h2_.transpose() * probs_;
  Bias(grads, 5) = probs_.colwise().sum();
  ready(2);
  // Through ReLU: the gradient passes where the activation was positive.
  d2_.noalias() = probs_ * Weights(p, 4).transpose();
  d2_ = (h2_.array() > S(0)).select(d2_, S(0));
  Weights(grads, 2).noalias() = h1_.transpose() * d2_;
  Bias(grads, 3) = d2_.colwise().sum();
  ready(1);
  d1_.noalias() = d2_ * Weights(p, 2).transpose();
  d1_ = (h1_.array() > S(0)).select(d1_, S(0));
  Weights(grads, 0).noalias() = x.transpose() * d1_;
  Bias(grads, 1) = d1_.colwise().sum();
  ready(0);
  return loss * inv_batch;
}

template <typename S>
S Mlp<S>::Evaluate(const MlpParams<S>& p, const Matrix& x,
                   const std::vector<int>& labels, int64_t* correct) {
  return Forward(p, x, labels, correct);
}

template struct MlpParams<float>;
template struct MlpParams<double>;
template class Mlp<float>;
template class Mlp<double>;
template void InitMlpParams<float>(uint64_t, MlpParams<float>*);
template void InitMlpParams<double>(uint64_t, MlpParams<double>*);

}  // namespace fabps::examples::fashion_mnist
