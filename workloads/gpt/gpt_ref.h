// CPU reference of the GPT-2 forward and backward pass and of AdamW, in double precision.
//
// It is the ground truth the CUDA kernels are checked against (train_gpt --check) and is itself
// checked by finite differences (gpt_ref_test.cpp), so it must stay simple and obviously right,
// not fast. Shapes follow llm.c's conventions: activations are row-major (B, T, C); a linear
// layer's weight is (OC, C) and computes out = inp · Wᵀ + bias.
#pragma once

#include <vector>

#include "gpt/gpt_config.h"

namespace gpuscope::gpt::ref {

using Vec = std::vector<double>;

// ---- layers: forward and backward (backward *accumulates* into d-arguments) -----------------

void EncoderForward(double* out, const int* inp, const double* wte, const double* wpe, int B, int T, int C);
void EncoderBackward(double* dwte, double* dwpe, const double* dout, const int* inp, int B, int T, int C);

// rows of C: out = (x - mean) * rstd * w + b, eps 1e-5, biased variance.
void LayerNormForward(double* out, double* mean, double* rstd, const double* inp, const double* w, const double* b,
                      int rows, int C);
void LayerNormBackward(double* dinp, double* dw, double* db, const double* dout, const double* inp, const double* w,
                       const double* mean, const double* rstd, int rows, int C);

// out (rows, OC) = inp (rows, C) · wᵀ (w is (OC, C)) + bias (may be null).
void MatmulForward(double* out, const double* inp, const double* w, const double* bias, int rows, int C, int OC);
void MatmulBackward(double* dinp, double* dw, double* dbias, const double* dout, const double* inp, const double* w,
                    int rows, int C, int OC);

// Causal multi-head self-attention. qkv is (B, T, 3C) = [q | k | v], head h uses channels
// [h·HS, (h+1)·HS) of each. att is (B, NH, T, T) post-softmax probabilities (0 above the diagonal).
void AttentionForward(double* out, double* att, const double* qkv, int B, int T, int C, int NH);
void AttentionBackward(double* dqkv, const double* dout, const double* qkv, const double* att, int B, int T, int C,
                       int NH);

// GELU, tanh approximation (GPT-2).
void GeluForward(double* out, const double* inp, size_t n);
void GeluBackward(double* dinp, const double* inp, const double* dout, size_t n);

// Softmax over the first V of Vp logits per row; padded entries get probability 0.
void SoftmaxForward(double* probs, const double* logits, int rows, int V, int Vp);
void CrossEntropyForward(double* losses, const double* probs, const int* targets, int rows, int Vp);
// dlogits = (probs - onehot(target)) * dloss per row; padded entries get 0.
void CrossEntropySoftmaxBackward(double* dlogits, const double* probs, const int* targets, double dloss, int rows,
                                 int V, int Vp);

// ---- the model ------------------------------------------------------------------------------

struct Activations {
  Vec encoded;  // (B,T,C)
  std::vector<Vec> ln1, ln1_mean, ln1_rstd, qkv, att, atty, attproj, residual2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu,
      fcproj, residual3;  // one per layer
  Vec lnf, lnf_mean, lnf_rstd, logits, probs, losses;
};

class GptRef {
 public:
  GptRef(const GptConfig& config, const std::vector<float>& params);

  // Mean cross-entropy over B·T positions. inputs and targets are (B, T).
  double Forward(const int* inputs, const int* targets, int B, int T);
  // Gradients of the mean loss of the last Forward, into grads() (overwritten, not accumulated).
  void Backward();
  // AdamW step over all parameters (decoupled weight decay on every tensor); step t starts at 1.
  void AdamW(double lr, double beta1, double beta2, double eps, double weight_decay, int t);

  const GptConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  Vec& params() { return params_; }
  const Vec& grads() const { return grads_; }
  const Activations& acts() const { return acts_; }

 private:
  GptConfig config_;
  ParamLayout layout_;
  Vec params_, grads_, m_, v_;
  Activations acts_;
  std::vector<int> inputs_, targets_;
  int B_ = 0, T_ = 0;
  double* P(int tensor) { return params_.data() + layout_.offset[tensor]; }
  double* G(int tensor) { return grads_.data() + layout_.offset[tensor]; }
};

}  // namespace gpuscope::gpt::ref
