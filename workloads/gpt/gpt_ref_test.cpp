// Tests of the CPU reference itself: its gradients against central finite differences, and that
// training it lowers the loss on the synthetic corpus. No GPU needed.
#include "gpt/gpt_ref.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace gpuscope::gpt {
namespace {

GptConfig TinyConfig() {
  GptConfig c;
  c.vocab_size = 11;
  c.padded_vocab_size = 16;  // exercises the padded columns
  c.max_seq_len = 8;
  c.num_layers = 2;
  c.num_heads = 2;
  c.channels = 8;
  return c;
}

// Random params with a larger spread than GPT-2's init so that every path carries gradient.
std::vector<float> RandomParams(const GptConfig& c, uint64_t seed) {
  std::vector<float> p = InitParams(c, seed);
  Rng rng(seed + 7);
  ParamLayout layout(c);
  for (int t = 0; t < kNumParamTensors; ++t)
    for (size_t i = 0; i < layout.size[t]; ++i) {
      if (t == kWte && i >= size_t(c.vocab_size) * c.channels) continue;  // padding rows stay 0
      p[layout.offset[t] + i] += float(0.3 * rng.Normal());
    }
  return p;
}

TEST(GptRef, GradientsMatchFiniteDifferences) {
  const GptConfig c = TinyConfig();
  const int B = 2, T = 5;
  std::vector<int> in(B * T), tg(B * T);
  SyntheticCorpus corpus(c.vocab_size, 3);
  corpus.NextBatch(B, T, in.data(), tg.data());
  ref::GptRef model(c, RandomParams(c, 1));
  model.Forward(in.data(), tg.data(), B, T);
  model.Backward();
  const ref::Vec analytic = model.grads();

  const ParamLayout& layout = model.layout();
  Rng pick(42);
  const double h = 1e-5;
  for (int t = 0; t < kNumParamTensors; ++t) {
    double max_err = 0, max_grad = 0;
    // Every element of small tensors, a sample of 40 of larger ones.
    const size_t n = layout.size[t];
    const size_t samples = std::min<size_t>(n, 40);
    for (size_t s = 0; s < samples; ++s) {
      const size_t i = layout.offset[t] + (n <= 40 ? s : pick.Next() % n);
      double& p = model.params()[i];
      const double saved = p;
      p = saved + h;
      const double up = model.Forward(in.data(), tg.data(), B, T);
      p = saved - h;
      const double down = model.Forward(in.data(), tg.data(), B, T);
      p = saved;
      const double fd = (up - down) / (2 * h);
      max_err = std::max(max_err, std::abs(fd - analytic[i]));
      max_grad = std::max(max_grad, std::abs(analytic[i]));
      EXPECT_NEAR(analytic[i], fd, 1e-8 + 1e-5 * std::abs(fd))
          << ParamTensorName(t) << " element " << i - layout.offset[t];
    }
    // The check means something only if the tensor receives gradient (padding aside).
    EXPECT_GT(max_grad, 1e-6) << ParamTensorName(t);
  }
}

TEST(GptRef, PaddedVocabularyGetsNoProbabilityOrGradient) {
  const GptConfig c = TinyConfig();
  const int B = 1, T = 4;
  std::vector<int> in(B * T), tg(B * T);
  SyntheticCorpus(c.vocab_size, 5).NextBatch(B, T, in.data(), tg.data());
  ref::GptRef model(c, RandomParams(c, 2));
  model.Forward(in.data(), tg.data(), B, T);
  model.Backward();
  const auto& probs = model.acts().probs;
  for (int r = 0; r < B * T; ++r) {
    double sum = 0;
    for (int i = 0; i < c.padded_vocab_size; ++i) {
      const double p = probs[size_t(r) * c.padded_vocab_size + i];
      if (i >= c.vocab_size) {
        EXPECT_EQ(p, 0.0);
      }
      sum += p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
  const ParamLayout& layout = model.layout();
  for (size_t i = size_t(c.vocab_size) * c.channels; i < layout.size[kWte]; ++i)
    EXPECT_EQ(model.grads()[layout.offset[kWte] + i], 0.0);
}

TEST(GptRef, AttentionIsCausal) {
  // Changing a later token must not change the loss contribution of earlier positions.
  const GptConfig c = TinyConfig();
  const int B = 1, T = 6;
  std::vector<int> in(B * T), tg(B * T);
  SyntheticCorpus(c.vocab_size, 9).NextBatch(B, T, in.data(), tg.data());
  ref::GptRef model(c, RandomParams(c, 4));
  model.Forward(in.data(), tg.data(), B, T);
  const ref::Vec before = model.acts().losses;
  in[T - 1] = (in[T - 1] + 1) % c.vocab_size;
  model.Forward(in.data(), tg.data(), B, T);
  for (int t = 0; t < T - 1; ++t) EXPECT_DOUBLE_EQ(model.acts().losses[t], before[t]) << t;
  EXPECT_NE(model.acts().losses[T - 1], before[T - 1]);
}

TEST(GptRef, LossFallsOnSyntheticCorpus) {
  GptConfig c;
  c.vocab_size = 16;
  c.padded_vocab_size = 16;
  c.max_seq_len = 16;
  c.num_layers = 2;
  c.num_heads = 2;
  c.channels = 16;
  const int B = 4, T = 16, steps = 150;
  ref::GptRef model(c, InitParams(c, 11));
  SyntheticCorpus corpus(c.vocab_size, 12);
  std::vector<int> in(B * T), tg(B * T);
  std::vector<double> losses;
  for (int s = 1; s <= steps; ++s) {
    corpus.NextBatch(B, T, in.data(), tg.data());
    losses.push_back(model.Forward(in.data(), tg.data(), B, T));
    model.Backward();
    model.AdamW(3e-3, 0.9, 0.999, 1e-8, 0.0, s);
  }
  const double first = losses.front();
  const double last10 = std::accumulate(losses.end() - 10, losses.end(), 0.0) / 10;
  EXPECT_NEAR(first, std::log(16.0), 0.1);  // untrained: close to uniform
  // The corpus has ln 4 = 1.39 nats of entropy per token; a model that learns the chain's
  // structure must get well below uniform (2.77).
  EXPECT_LT(last10, 2.0) << "first " << first << " last10 " << last10;
}

TEST(GptConfig, Gpt2SmallShapesAndFlops) {
  const GptConfig c;  // GPT-2 124M defaults
  const ParamLayout p(c);
  EXPECT_EQ(p.total, 124475904u);  // with the vocabulary padded to 50304 (llm.c's count)
  EXPECT_DOUBLE_EQ(ModelParamsForFlops(c), 124475904.0 - 1024 * 768 - 47 * 768);
  // 6N + 12·L·H·Q·T with H·Q = C = 768, L = 12, T = 1024.
  EXPECT_DOUBLE_EQ(TrainFlopsPerToken(c, 1024), 6 * 123653376.0 + 12.0 * 12 * 768 * 1024);
}

TEST(SyntheticCorpus, TargetsAreNextInputsAndFollowTheChain) {
  SyntheticCorpus corpus(100, 1);
  const int B = 3, T = 20;
  std::vector<int> in(B * T), tg(B * T);
  corpus.NextBatch(B, T, in.data(), tg.data());
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      if (t + 1 < T) {
        EXPECT_EQ(tg[b * T + t], in[b * T + t + 1]);
      }
      const int x = in[b * T + t], y = tg[b * T + t];
      bool ok = false;
      for (int k = 0; k < 4; ++k) ok |= corpus.Successor(x, k) == y;
      EXPECT_TRUE(ok) << x << " -> " << y;
    }
}

}  // namespace
}  // namespace gpuscope::gpt
