// GPT-2 model shapes, parameter layout, the model-FLOPs convention and the synthetic corpus.
// Plain C++, shared by the CPU reference (gpt_ref.*) and the CUDA trainer (train_gpt.cu).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuscope::gpt {

struct GptConfig {
  int vocab_size = 50257;         // V: real vocabulary
  int padded_vocab_size = 50304;  // Vp: V rounded up to a multiple of 128 for the GEMMs
  int max_seq_len = 1024;         // maxT: rows of the position embedding
  int num_layers = 12;            // L
  int num_heads = 12;             // NH
  int channels = 768;             // C

  int head_size() const { return channels / num_heads; }
};

// The 16 parameter tensors, in the order they sit in one flat buffer (all layers of one kind
// are contiguous, layer-major).
enum ParamTensor {
  kWte,
  kWpe,
  kLn1W,
  kLn1B,
  kQkvW,
  kQkvB,
  kAttProjW,
  kAttProjB,
  kLn2W,
  kLn2B,
  kFcW,
  kFcB,
  kFcProjW,
  kFcProjB,
  kLnfW,
  kLnfB,
  kNumParamTensors
};

inline const char* ParamTensorName(int i) {
  static const char* names[kNumParamTensors] = {"wte",      "wpe",      "ln1w", "ln1b", "qkvw", "qkvb",
                                                "attprojw", "attprojb", "ln2w", "ln2b", "fcw",  "fcb",
                                                "fcprojw",  "fcprojb",  "lnfw", "lnfb"};
  return names[i];
}

struct ParamLayout {
  std::array<size_t, kNumParamTensors> size{};    // elements
  std::array<size_t, kNumParamTensors> offset{};  // elements from the start of the flat buffer
  size_t total = 0;

  explicit ParamLayout(const GptConfig& c) {
    const size_t Vp = c.padded_vocab_size, C = c.channels, L = c.num_layers, T = c.max_seq_len;
    size = {Vp * C, T * C, L * C,         L * C,     L * 3 * C * C, L * 3 * C, L * C * C, L * C,
            L * C,  L * C, L * 4 * C * C, L * 4 * C, L * C * 4 * C, L * C,     C,         C};
    for (int i = 0; i < kNumParamTensors; ++i) {
      offset[i] = total;
      total += size[i];
    }
  }
};

// N for the MFU formula: parameters without position embeddings and without the padding rows
// of the token embedding (which never receive gradient).
inline double ModelParamsForFlops(const GptConfig& c) {
  ParamLayout p(c);
  return double(p.total) - double(p.size[kWpe]) - double(c.padded_vocab_size - c.vocab_size) * c.channels;
}

// Training FLOPs per token, PaLM appendix B convention: 6N + 12·L·H·Q·T
// (H heads, Q head size, so H·Q = C; T the sequence length).
inline double TrainFlopsPerToken(const GptConfig& c, int seq_len) {
  return 6.0 * ModelParamsForFlops(c) + 12.0 * c.num_layers * double(c.channels) * seq_len;
}

// Small deterministic PRNG (xorshift64*), identical on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t Next() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return s_ * 0x2545F4914F6CDD1Dull;
  }
  double Uniform() { return (Next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
  double Normal() {                                                         // Box-Muller
    double u1 = Uniform(), u2 = Uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t s_;
};

// GPT-2-style initialisation: N(0, 0.02) for matrices and embeddings, residual projections
// scaled by 1/sqrt(2L), biases 0, layernorm weights 1. Padding rows of wte are zero.
inline std::vector<float> InitParams(const GptConfig& c, uint64_t seed) {
  ParamLayout p(c);
  std::vector<float> w(p.total, 0.f);
  Rng rng(seed);
  const double proj_std = 0.02 / std::sqrt(2.0 * c.num_layers);
  for (int t = 0; t < kNumParamTensors; ++t) {
    float* x = w.data() + p.offset[t];
    switch (t) {
      case kLn1W:
      case kLn2W:
      case kLnfW:
        for (size_t i = 0; i < p.size[t]; ++i) x[i] = 1.f;
        break;
      case kWte:
        for (size_t i = 0; i < size_t(c.vocab_size) * c.channels; ++i) x[i] = float(0.02 * rng.Normal());
        break;
      case kWpe:
      case kQkvW:
      case kFcW:
        for (size_t i = 0; i < p.size[t]; ++i) x[i] = float(0.02 * rng.Normal());
        break;
      case kAttProjW:
      case kFcProjW:
        for (size_t i = 0; i < p.size[t]; ++i) x[i] = float(proj_std * rng.Normal());
        break;
      default:
        break;  // biases stay 0
    }
  }
  return w;
}

// A learnable synthetic corpus: a sparse Markov chain in which every token has 4 possible
// successors (fixed by a hash of the token), chosen uniformly. Its entropy is ln 4 = 1.386
// nats per token, so a model that learns it drives the loss from ln V towards 1.39.
class SyntheticCorpus {
 public:
  SyntheticCorpus(int vocab_size, uint64_t seed) : vocab_(vocab_size), rng_(seed), cur_(0) {}

  int Successor(int token, int choice) const {
    uint64_t h = (uint64_t(token) * 4 + choice + 1) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return int(h % uint64_t(vocab_));
  }

  // Fills B rows of T+1 consecutive tokens: inputs are tokens [0, T), targets [1, T].
  void NextBatch(int B, int T, int* inputs, int* targets) {
    for (int b = 0; b < B; ++b) {
      int tok = cur_;
      for (int t = 0; t <= T; ++t) {
        if (t < T) inputs[b * T + t] = tok;
        if (t > 0) targets[b * T + t - 1] = tok;
        tok = Successor(tok, int(rng_.Next() & 3));
      }
      cur_ = tok;
    }
  }

 private:
  int vocab_;
  Rng rng_;
  int cur_;
};

}  // namespace gpuscope::gpt
