// The Fashion-MNIST example model: a multilayer perceptron
// 784-256-128-10 with ReLU after the two hidden layers and softmax
// cross-entropy on the 10 logits, computed with Eigen.
//
// Parameters are six separate tensors, stored row-major as the pservers hold
// them (protocol/layout.h: a [rows, cols] tensor is rows rows of cols
// elements):
//   fc1.w [784, 256]  fc1.b [256]
//   fc2.w [256, 128]  fc2.b [128]
//   fc3.w [128, 10]   fc3.b [10]
// A layer computes out = in * w + b for a batch of row vectors `in`.
//
// The scalar type is a template parameter: float for training, double for
// the gradient check of the tests. Only float and double are instantiated.
//
// Thread safety: an Mlp keeps its activations between calls; one thread per
// Mlp. MlpParams are plain values.
#ifndef FABPS_EXAMPLES_FASHION_MNIST_MLP_H_
#define FABPS_EXAMPLES_FASHION_MNIST_MLP_H_

#include <Eigen/Core>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace fabps::examples::fashion_mnist {

constexpr int kPixels = 784;
constexpr int kHidden1 = 256;
constexpr int kHidden2 = 128;
constexpr int kClasses = 10;
constexpr int kNumTensors = 6;
// Layer l (fc(l+1)) holds tensors 2l (weights) and 2l+1 (bias).
constexpr int kNumLayers = kNumTensors / 2;

struct TensorShape {
  const char* name;
  int rows;
  int cols;  // 0: a vector of `rows` elements
  size_t elements() const {
    return static_cast<size_t>(rows) * static_cast<size_t>(cols ? cols : 1);
  }
};

// The six tensors in pserver order: fc1.w, fc1.b, fc2.w, fc2.b, fc3.w, fc3.b.
const std::array<TensorShape, kNumTensors>& MlpTensorShapes();

// Values (or gradients) of every tensor, sized by MlpTensorShapes(), zeroed.
template <typename S>
struct MlpParams {
  MlpParams();
  std::array<std::vector<S>, kNumTensors> tensors;
  size_t total_elements() const;
};

// He-normal weights (std sqrt(2 / fan_in)) for the two ReLU layers,
// Glorot-uniform (limit sqrt(6 / (fan_in + fan_out))) for the output layer,
// zero biases. The same seed gives the same values on every machine (the
// generators are written out here, not taken from <random>'s distributions,
// whose output differs between standard libraries).
template <typename S>
void InitMlpParams(uint64_t seed, MlpParams<S>* params);

// Callbacks of one LossAndGradients, for a trainer that overlaps its
// transfers with the computation (both optional). Layer l is fc(l+1): its
// weights are tensor 2l, its bias tensor 2l+1.
struct LayerHooks {
  // Before the forward pass reads layer l's tensors (l = 0, 1, 2): the
  // caller may wait here for their values to arrive.
  std::function<void(int layer)> before_layer;
  // Once layer l's gradients are final in *grads (l = 2, 1, 0, in that
  // order: backward): the caller may send them while the layers below are
  // computed. Nothing writes them again in this call.
  std::function<void(int layer)> grads_ready;
};

template <typename S>
class Mlp {
 public:
  using Matrix =
      Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  // Mean softmax cross-entropy of the batch (`x`: one example per row, 784
  // inputs each; `labels`: x.rows() values in 0..9) and, in `*grads`, its
  // gradient with respect to every tensor of `params` (so the gradient is
  // averaged over the batch). x must have at least one row.
  S LossAndGradients(const MlpParams<S>& params, const Matrix& x,
                     const std::vector<int>& labels, MlpParams<S>* grads,
                     const LayerHooks* hooks = nullptr);

  // The summed (not averaged) cross-entropy of the batch; adds the number of
  // examples whose arg-max logit is their label to *correct.
  S Evaluate(const MlpParams<S>& params, const Matrix& x,
             const std::vector<int>& labels, int64_t* correct);

 private:
  // Fills h1_, h2_ and probs_ (softmax of the logits); returns the summed
  // cross-entropy and counts correct predictions when `correct` is set.
  S Forward(const MlpParams<S>& params, const Matrix& x,
            const std::vector<int>& labels, int64_t* correct,
            const LayerHooks* hooks = nullptr);

  Matrix h1_, h2_, probs_;  // activations of the last Forward
  Matrix d1_, d2_;          // gradients w.r.t. hidden pre-activations
};

extern template struct MlpParams<float>;
extern template struct MlpParams<double>;
extern template class Mlp<float>;
extern template class Mlp<double>;

}  // namespace fabps::examples::fashion_mnist

#endif  // FABPS_EXAMPLES_FASHION_MNIST_MLP_H_
