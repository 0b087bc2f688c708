// The CTR example's model: each of F fields' hashed feature picks a row of
// the embedding table "emb" [table_rows, kEmbeddingDim]; the F rows,
// concatenated, go through a small MLP
//   x [B, F*16] -> fc1 (ReLU) [B, H] -> fc2 [B, 1] -> logit
// and the loss is the mean logistic loss of the logits against the click
// labels.
//
// The embedding lives on the pservers and is moved row by row
// (PServerClient::GetRows fills x directly: row k of the call is field
// k % F of example k / F); the MLP's four tensors are dense parameters:
//   fc1.w [F*16, H]  fc1.b [H]  fc2.w [H, 1]  fc2.b [1]
// row-major, as the pservers hold them.
//
// Thread safety: a CtrMlp keeps its activations between calls; one thread
// per CtrMlp.
#ifndef FABPS_EXAMPLES_CTR_CTR_MODEL_H_
#define FABPS_EXAMPLES_CTR_CTR_MODEL_H_

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace fabps::examples::ctr {

constexpr int kEmbeddingDim = 16;
constexpr const char* kEmbeddingName = "emb";
// Scale of the table's initial values (uniform in [-scale, scale]): small,
// so that the MLP starts near a constant and every row learns from its own
// gradients.
constexpr float kEmbeddingInitScale = 0.01f;

using Matrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct MlpTensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> values;
};

// The MLP's tensors in pserver order: fc1.w, fc1.b, fc2.w, fc2.b.
struct CtrMlpParams {
  CtrMlpParams(int fields, int hidden);
  std::array<MlpTensor, 4> tensors;
  int inputs, hidden;
};

// He-style random fc weights from `seed`, zero biases.
void InitCtrMlp(uint64_t seed, CtrMlpParams* p);
// Uniform in [-scale, scale] from `seed` into `n` floats.
void InitEmbedding(uint64_t seed, float scale, float* values, size_t n);

// The logistic loss of logit z against label y (0/1), without overflow.
double LogisticLoss(double z, int y);

class CtrMlp {
 public:
  // Logits of the rows of x [B, inputs] into *logits (size B).
  void Logits(const CtrMlpParams& p, const Matrix& x,
              std::vector<float>* logits);
  // Mean logistic loss over the rows of x against labels (0/1); writes the
  // loss's gradients of every tensor into *grads and of x into *dx
  // (resized to x's shape).
  float LossAndGradients(const CtrMlpParams& p, const Matrix& x,
                         const std::vector<int>& labels, CtrMlpParams* grads,
                         Matrix* dx);

 private:
  Matrix h_;
};

}  // namespace fabps::examples::ctr

#endif  // FABPS_EXAMPLES_CTR_CTR_MODEL_H_
