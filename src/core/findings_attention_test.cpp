// The attention-unfused estimate (findings_attention.cpp) on a hand-built layer with known GEMM
// shapes and times: the score passes' spans and the score GEMMs go, the fused kernels cost the
// score GEMMs' FLOPs (2 forward, 5 backward, halved when causal) at the other GEMMs' rate.
#include <gtest/gtest.h>

#include "core/analysis.h"
#include "core/analysis_test_util.h"
#include "core/test_builder.h"

namespace gpuscope {
namespace {

using testing::FindingById;

// One attention layer forward and backward (16 heads x batch 1, T = 1024, head size 64, bf16),
// then one weight GEMM (4096 x 1024 x 1024) of 20 us, starting at `at` us. Every score GEMM
// (2·16·1024·1024·64 FLOPs, a quarter of the weight GEMM's) takes 100 us; `causal` adds the
// mask's tril kernel.
void add_layer(testing::TraceBuilder& b, bool causal, double at) {
  const std::vector<int64_t> q = {16, 1024, 64}, kt = {16, 64, 1024}, p = {16, 1024, 1024};
  auto gemm = [&](double start, double end, std::vector<std::vector<int64_t>> shapes, const char* op = "aten::bmm") {
    b.op(at + start - 6, at + start, op, std::move(shapes), "c10::BFloat16");
    b.kernel(at + start, at + end, "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
  };
  auto kernel = [&](double start, double end, const char* name) { b.kernel(at + start, at + end, name); };
  gemm(0, 100, {q, kt});                                             // q·kᵀ
  kernel(100, 150, "vectorized_elementwise_kernel<AUnaryFunctor>");  // scale
  if (causal) kernel(150, 151, "void at::native::triu_tril_kernel<bool, int, false, 8, false>");
  // masked_fill, after a gap, though launched (at 140 us) while the scale ran: the GPU had it
  // queued, so the layer's kernel time is all GPU-paced (gpu_paced_kernels).
  b.kernel(at + 160, at + 200, "elementwise_kernel", 1000, 0, 7, at + 140);
  kernel(200, 300, "softmax_warp_forward<float>");
  kernel(300, 320, "vectorized_elementwise_kernel<bfloat16_copy_kernel_cuda>");
  gemm(320, 420, {p, q});   // P·v
  gemm(420, 520, {p, q});   // dV = Pᵀ·dY
  gemm(520, 620, {q, kt});  // dP = dY·vᵀ
  kernel(620, 720, "softmax_warp_backward<float>");
  kernel(720, 760, "elementwise_kernel");
  gemm(760, 860, {p, q});                                    // dQ = dS·k
  gemm(860, 960, {p, q});                                    // dK = dSᵀ·q
  gemm(960, 980, {{4096, 1024}, {1024, 1024}}, "aten::mm");  // a weight GEMM
}

// `layers` layers, one every 1000 us.
Trace attention_layers(bool causal, int layers = 1) {
  testing::TraceBuilder b;
  for (int l = 0; l < layers; ++l) add_layer(b, causal, 1000.0 * l);
  return b.build();
}

// The window without the passes (spans 100..320 and 620..760: 360 us) and the six score GEMMs
// (600 us), plus the fused kernels: 6 score GEMMs = 1.5 weight GEMMs of FLOPs, x 7/6 for the
// backward's recomputation, x 1/2 when causal, at the weight GEMM's 20 us.
double expected_speedup(double window_us, bool causal) {
  const double fused_us = 1.5 * 20.0 * 7.0 / 6.0 * (causal ? 0.5 : 1.0);
  return window_us / (window_us - (360.0 + 600.0 - fused_us));
}

TEST(AttentionUnfused, CausalMaskHalvesTheFusedKernelsWork) {
  const DeviceReport r = analyze_trace(attention_layers(true), {}).at(0);
  ASSERT_EQ(r.window_ns, 980'000);
  const Finding* f = FindingById(r, "attention-unfused");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(*f->est_speedup, expected_speedup(980, true), 1e-9);  // 980 / 37.5
  EXPECT_NE(f->evidence.find("score GEMMs 0.60 ms per step (6 launches)"), std::string::npos) << f->evidence;
  EXPECT_NE(f->recommendation.find("about 0.02 ms per step"), std::string::npos) << f->recommendation;  // 17.5 us
  EXPECT_NE(f->recommendation.find("the mask is causal"), std::string::npos);
  EXPECT_NE(f->recommendation.find("Estimate (est.)"), std::string::npos);
  EXPECT_NE(f->recommendation.find("scaled_dot_product_attention"), std::string::npos);
}

TEST(AttentionUnfused, WithoutEvidenceOfACausalMaskAFullMaskIsAssumed) {
  const DeviceReport r = analyze_trace(attention_layers(false), {}).at(0);
  const Finding* f = FindingById(r, "attention-unfused");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(*f->est_speedup, expected_speedup(980, false), 1e-9);  // 980 / 55
  EXPECT_NE(f->recommendation.find("a full mask is assumed"), std::string::npos) << f->recommendation;
}

TEST(AttentionUnfused, KernelFusionLeavesTheScorePassesToIt) {
  const DeviceReport r = analyze_trace(attention_layers(true, 8), {}).at(0);
  ASSERT_NE(FindingById(r, "attention-unfused"), nullptr);
  // The score passes recur as fusion candidates, but attention-unfused claims them.
  ASSERT_FALSE(r.fusion.empty());
  EXPECT_GT(r.fusion.front().est_saving_ns, 0.02 * static_cast<double>(r.window_ns));
  EXPECT_EQ(FindingById(r, "kernel-fusion"), nullptr);
}

TEST(AttentionUnfused, TheSnippetIsCausalOnlyWhereACausalMaskWasSeen) {
  const DeviceReport causal = analyze_trace(attention_layers(true), {}).at(0);
  const DeviceReport full = analyze_trace(attention_layers(false), {}).at(0);
  ASSERT_NE(FindingById(causal, "attention-unfused"), nullptr);
  ASSERT_NE(FindingById(full, "attention-unfused"), nullptr);
  EXPECT_NE(FindingById(causal, "attention-unfused")->recommendation.find("is_causal=True)"), std::string::npos);
  EXPECT_EQ(FindingById(full, "attention-unfused")->recommendation.find("v, is_causal=True"), std::string::npos)
      << FindingById(full, "attention-unfused")->recommendation;
}

// An MLP's logits through weight GEMMs (no batch), a softmax for the loss, and the backward's
// weight GEMM: a softmax between GEMMs whose shapes are not one batched T x T x d product.
TEST(AttentionUnfused, ASoftmaxBetweenWeightGemmsIsNotAttention) {
  testing::TraceBuilder b;
  for (int l = 0; l < 4; ++l) {
    const double at = 1000.0 * l;
    b.op(at, at + 4, "aten::addmm", {{4096}, {4096, 1024}, {1024, 50304}}, "c10::BFloat16");
    b.kernel(at + 5, at + 200, "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
    b.kernel(at + 200, at + 400, "softmax_warp_forward<float>");
    b.kernel(at + 400, at + 500, "vectorized_elementwise_kernel<AUnaryFunctor>");
    b.op(at + 495, at + 500, "aten::mm", {{4096, 50304}, {50304, 1024}}, "c10::BFloat16");
    b.kernel(at + 500, at + 700, "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
  }
  const DeviceReport r = analyze_trace(b.build(), {}).at(0);
  EXPECT_EQ(FindingById(r, "attention-unfused"), nullptr);
}

}  // namespace
}  // namespace gpuscope
