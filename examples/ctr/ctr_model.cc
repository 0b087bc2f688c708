#include "examples/ctr/ctr_model.h"

#include <cmath>
#include <random>

namespace fabps::examples::ctr {
namespace {

using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
using Map = Eigen::Map<Matrix>;
using ConstMap = Eigen::Map<const Matrix>;
using ConstRow = Eigen::Map<const RowVector>;

ConstMap Tensor(const CtrMlpParams& p, int i, int rows, int cols) {
  return ConstMap(p.tensors[i].values.data(), rows, cols);
}

}  // namespace

double LogisticLoss(double z, int y) {
  // log(1 + exp(z)) - y * z
  return (z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z))) -
         y * z;
}

CtrMlpParams::CtrMlpParams(int fields, int hidden_units)
    : inputs(fields * kEmbeddingDim), hidden(hidden_units) {
  auto in = static_cast<uint64_t>(inputs), h = static_cast<uint64_t>(hidden);
  tensors[0] = {"fc1.w", {in, h}, std::vector<float>(in * h)};
  tensors[1] = {"fc1.b", {h}, std::vector<float>(h)};
  tensors[2] = {"fc2.w", {h, 1}, std::vector<float>(h)};
  tensors[3] = {"fc2.b", {1}, std::vector<float>(1)};
}

void InitCtrMlp(uint64_t seed, CtrMlpParams* p) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n1(0, std::sqrt(2.0f / p->inputs));
  std::normal_distribution<float> n2(0, std::sqrt(1.0f / p->hidden));
  for (float& v : p->tensors[0].values) v = n1(rng);
  for (float& v : p->tensors[2].values) v = n2(rng);
  for (int i : {1, 3})
    std::fill(p->tensors[i].values.begin(), p->tensors[i].values.end(), 0.f);
}

void InitEmbedding(uint64_t seed, float scale, float* values, size_t n) {
  // splitmix64: fast enough for 2^26 values and the same on every machine.
  uint64_t s = seed;
  for (size_t i = 0; i < n; i++) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    double u = static_cast<double>(z >> 11) * 0x1.0p-53;  // [0, 1)
    values[i] = static_cast<float>((2 * u - 1) * scale);
  }
}

void CtrMlp::Logits(const CtrMlpParams& p, const Matrix& x,
                    std::vector<float>* logits) {
  h_ = ((x * Tensor(p, 0, p.inputs, p.hidden)).rowwise() +
        ConstRow(p.tensors[1].values.data(), p.hidden))
           .cwiseMax(0.f);
  Eigen::VectorXf z = h_ * Tensor(p, 2, p.hidden, 1);
  logits->resize(static_cast<size_t>(x.rows()));
  for (Eigen::Index i = 0; i < x.rows(); i++)
    (*logits)[i] = z(i) + p.tensors[3].values[0];
}

float CtrMlp::LossAndGradients(const CtrMlpParams& p, const Matrix& x,
                               const std::vector<int>& labels,
                               CtrMlpParams* grads, Matrix* dx) {
  std::vector<float> z;
  Logits(p, x, &z);
  const Eigen::Index b = x.rows();
  const float inv_b = 1.0f / static_cast<float>(b);
  // dLoss/dz = (sigmoid(z) - y) / B for the mean logistic loss.
  Eigen::VectorXf dz(b);
  double loss = 0;
  for (Eigen::Index i = 0; i < b; i++) {
    float y = static_cast<float>(labels[i]);
    loss += LogisticLoss(z[i], labels[i]);
    dz(i) = (1.0f / (1.0f + std::exp(-z[i])) - y) * inv_b;
  }
  Map(grads->tensors[2].values.data(), p.hidden, 1) = h_.transpose() * dz;
  grads->tensors[3].values[0] = dz.sum();
  // Through fc2 and the ReLU.
  Matrix dh = dz * ConstRow(p.tensors[2].values.data(), p.hidden);
  dh = dh.cwiseProduct((h_.array() > 0.f).cast<float>().matrix());
  Map(grads->tensors[0].values.data(), p.inputs, p.hidden) = x.transpose() * dh;
  Eigen::Map<RowVector>(grads->tensors[1].values.data(), p.hidden) =
      dh.colwise().sum();
  *dx = dh * Tensor(p, 0, p.inputs, p.hidden).transpose();
  return static_cast<float>(loss * inv_b);
}

}  // namespace fabps::examples::ctr
