// The serving findings (findings_serving.cpp): under-batched, scheduling-gap,
// tensor-unfriendly-shape, and the serving metrics.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/analysis.h"
#include "core/analysis_test_util.h"
#include "core/catalog.h"
#include "core/device_context.h"
#include "core/findings.h"
#include "core/host_index.h"
#include "core/steps.h"
#include "core/test_builder.h"

namespace gpuscope {
namespace {

using testing::FindingById;
using testing::only;
using testing::TraceBuilder;

constexpr const char* kGemmKernel = "sm90_xmma_gemm_bf16bf16_bf16f32";
constexpr const char* kBf16 = "c10::BFloat16";

// A decode-like loop: `iterations` forward passes 100 us apart (gpuscope.forward#GPT, so the
// steps are forward passes), each one weight GEMM [m, k] x [k, n] launched from aten::addmm
// (20 us on the GPU) and one elementwise kernel (8 us); the forward ends at +40 us and the host
// then runs code that issues no GPU work until the next iteration.
struct Loop {
  int64_t m = 1, n = 3072, k = 768;
  int iterations = 6;
  bool training = false;  // Optimizer steps and ProfilerStep markers instead of forwards.
  std::string dtype = kBf16;
  std::string gemm_kernel = kGemmKernel;
  double gemm_us = 20;
  int64_t aligned_n = 0;  // When set, a second weight GEMM [m, k] x [k, aligned_n] of aligned_us.
  double aligned_us = 4;
};

Trace DecodeLoop(const Loop& l) {
  TraceBuilder b;
  for (int i = 0; i < l.iterations; ++i) {
    const double t = 100.0 * i;
    if (l.training) {
      b.annotation(t, t + 100, "ProfilerStep#" + std::to_string(i));
      b.annotation(t + 42, t + 50, "Optimizer.step#AdamW.step");
    } else {
      b.annotation(t, t + 40, "gpuscope.forward#GPT");
    }
    b.op(t + 0.5, t + 7, "aten::addmm", {{l.n}, {l.m, l.k}, {l.k, l.n}}, l.dtype);
    b.kernel(t + 6, t + 6 + l.gemm_us, l.gemm_kernel, 1000, 0, 7, t + 1, 5);
    b.kernel(t + 30, t + 38, "vectorized_elementwise_kernel<GeluFunctor>", 1000, 0, 7, t + 8, 5);
    if (l.aligned_n > 0) {
      b.op(t + 14, t + 16, "aten::addmm", {{l.aligned_n}, {l.m, l.k}, {l.k, l.aligned_n}}, l.dtype);
      b.kernel(t + 39, t + 39 + l.aligned_us, l.gemm_kernel, 1000, 0, 7, t + 14.5, 1);
    }
  }
  return b.build();
}

TEST(ServingFindings, PeakMemoryBandwidthByDevice) {
  EXPECT_DOUBLE_EQ(*peak_memory_tbps("NVIDIA H100 80GB HBM3"), 3.35);
  EXPECT_DOUBLE_EQ(*peak_memory_tbps("NVIDIA H100 PCIe"), 2.0);
  EXPECT_DOUBLE_EQ(*peak_memory_tbps("NVIDIA H200"), 4.8);
  EXPECT_DOUBLE_EQ(*peak_memory_tbps("NVIDIA GH200 480GB"), 4.0);
  EXPECT_DOUBLE_EQ(*peak_memory_tbps("NVIDIA A100-SXM4-80GB"), 2.0);
  EXPECT_DOUBLE_EQ(*peak_memory_tbps("NVIDIA A100-SXM4-40GB"), 1.555);
  EXPECT_FALSE(peak_memory_tbps("NVIDIA GeForce GTX 1080").has_value());
}

TEST(ServingFindings, UnderBatchedDecodeEstimatesTokensPerSecondAtTheRidge) {
  const Loop l;
  const DeviceReport r = only(DecodeLoop(l));
  ASSERT_EQ(r.step_source, "forward_pass");
  const Finding* f = FindingById(r, "under-batched");
  ASSERT_NE(f, nullptr);
  // H100 SXM: 989.4 TFLOP/s bf16, 3.35 TB/s. The token dimension grows by g until compute time
  // equals memory time: g = (e·K·N / W) / (2·M·N·K / P - e·M·(K+N) / W).
  const double P = 989.4e12, W = 3.35e12, e = 2, M = 1, N = 3072, K = 768;
  const double g = (e * K * N / W) / (2 * M * N * K / P - e * M * (K + N) / W);
  // At the ridge the GEMM's roofline time (~2.7 us) is under its measured 20 us: it keeps 20 us,
  // the iteration keeps its length, and tokens per second grow by g.
  EXPECT_NEAR(*f->est_speedup, g, 1e-6 * g);
  EXPECT_NE(f->evidence.find(fmt::format("M* = {:.0f} tokens", g)), std::string::npos) << f->evidence;
  EXPECT_NE(f->evidence.find("with 1 tokens (M)"), std::string::npos) << f->evidence;
  EXPECT_NE(f->recommendation.find("tokens per second, not a step-time speedup"), std::string::npos);
  EXPECT_EQ(r.findings.front().id, "under-batched");
}

// With the device's per-SM limits known, the iteration's other kernels grow with the batch in
// waves: the elementwise kernel (1000 blocks of 256 threads; 8 resident per SM on 100 SMs: 800 a
// wave, so 2 waves as traced) takes ceil(1000 g / 800) / 2 times as long at g times the tokens.
TEST(ServingFindings, UnderBatchedGrowsTheOtherKernelsInWaves) {
  Trace t = DecodeLoop(Loop{});
  t.devices[0].max_threads_per_sm = 2048;
  const DeviceReport r = only(std::move(t));
  const Finding* f = FindingById(r, "under-batched");
  ASSERT_NE(f, nullptr);
  const double P = 989.4e12, W = 3.35e12, e = 2, M = 1, N = 3072, K = 768;
  const double g = (e * K * N / W) / (2 * M * N * K / P - e * M * (K + N) / W);
  const double steps = static_cast<double>(r.step_count), window = static_cast<double>(r.window_ns);
  const double grown = window + steps * 8e3 * (std::ceil(1000 * g / 800) / 2 - 1);
  EXPECT_NEAR(*f->est_speedup, g * window / grown, 1e-3);
  EXPECT_LT(*f->est_speedup, g / 2);  // The flat estimate would say g.
  EXPECT_NE(f->evidence.find("the other kernels work per sequence"), std::string::npos) << f->evidence;
  // Without the limits (the test above) the same kernels are kept as they are.
  const DeviceReport flat_report = only(DecodeLoop(Loop{}));
  const Finding* flat = FindingById(flat_report, "under-batched");
  ASSERT_NE(flat, nullptr);
  EXPECT_NEAR(*flat->est_speedup, g, 1e-6 * g);
}

// Kernels whose launch configuration is unknown stay as they are, and the evidence says how much
// of the other kernels' time that is.
TEST(ServingFindings, BatchGrowthKeepsKernelsWithoutAGridAsTheyAre) {
  Trace t = DecodeLoop(Loop{});
  t.devices[0].max_threads_per_sm = 2048;
  for (Kernel& k : t.kernels) {
    if (t.strings.view(k.name).starts_with("vectorized")) k.grid = {};
  }
  const DeviceReport r = only(std::move(t));
  const Finding* f = FindingById(r, "under-batched");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("100% of their time has no launch configuration"), std::string::npos) << f->evidence;
}

TEST(ServingFindings, NoUnderBatchedAtTheRidgeOrWhenTraining) {
  Loop big;
  big.m = 1024;  // Above half the ridge point (~569 for this N, K on the H100).
  EXPECT_EQ(FindingById(only(DecodeLoop(big)), "under-batched"), nullptr);
  Loop train;
  train.training = true;
  const DeviceReport r = only(DecodeLoop(train));
  EXPECT_EQ(FindingById(r, "under-batched"), nullptr);
  EXPECT_EQ(FindingById(r, "scheduling-gap"), nullptr);
  EXPECT_FALSE(r.serving.has_value());
}

TEST(ServingFindings, UnderBatchedNeedsAKnownRoofline) {
  TraceBuilder b(100, "Some Unknown GPU");
  for (int i = 0; i < 6; ++i) {
    const double t = 100.0 * i;
    b.annotation(t, t + 40, "gpuscope.forward#GPT");
    b.op(t + 0.5, t + 7, "aten::addmm", {{3072}, {1, 768}, {768, 3072}}, kBf16);
    b.kernel(t + 6, t + 26, kGemmKernel, 1000, 0, 7, t + 1, 5);
  }
  EXPECT_EQ(FindingById(only(b.build()), "under-batched"), nullptr);
}

TEST(ServingFindings, SchedulingGapPerIterationStatistics) {
  const DeviceReport r = only(DecodeLoop(Loop{}));
  const Finding* f = FindingById(r, "scheduling-gap");
  ASSERT_NE(f, nullptr);
  // Each iteration: the forward ends at +40 us, the next one starts at +100 us: 60 us of host
  // code that issues no GPU work (the GPU idles from +38 to the next kernel at +106; the rest
  // is the forward's own dispatch and the next launch).
  EXPECT_NE(f->evidence.find("0.06 ms per iteration on average (p90 0.06 ms)"), std::string::npos) << f->evidence;
  // 6 forwards make 5 steps (each runs to the next forward), and the last, partial one is left
  // out: 4 iterations of 100 us, 60% of the wall time.
  EXPECT_NE(f->evidence.find("60.0% of the wall time over 4 iterations"), std::string::npos) << f->evidence;
  // Overlapped with the GPU, an iteration takes max(100 - 60, 60) us.
  EXPECT_NEAR(*f->est_speedup, 100.0 / 60.0, 1e-6);
}

// The bootstrap marked optimizer steps before the window: a training program (its step in a
// CUDA graph calls no optimizer in the window), so no serving finding.
TEST(ServingFindings, OptimizerStepsBeforeTheWindowMeanTraining) {
  Trace t = DecodeLoop(Loop{});
  t.strings.intern("gpuscope.host#optimizer_steps=4");
  const DeviceReport r = only(std::move(t));
  EXPECT_EQ(FindingById(r, "scheduling-gap"), nullptr);
  EXPECT_EQ(FindingById(r, "under-batched"), nullptr);
  Trace serving = DecodeLoop(Loop{});
  serving.strings.intern("gpuscope.host#optimizer_steps=0");
  EXPECT_NE(FindingById(only(std::move(serving)), "scheduling-gap"), nullptr);
}

TEST(ServingFindings, NoSchedulingGapWhenTheNextIterationFollowsAtOnce) {
  TraceBuilder b;
  for (int i = 0; i < 6; ++i) {
    const double t = 40.0 * i;
    b.annotation(t, t + 40, "gpuscope.forward#GPT");
    b.op(t + 0.5, t + 7, "aten::addmm", {{3072}, {1, 768}, {768, 3072}}, kBf16);
    b.kernel(t + 6, t + 40, kGemmKernel, 1000, 0, 7, t + 1, 5);
  }
  EXPECT_EQ(FindingById(only(b.build()), "scheduling-gap"), nullptr);
}

TEST(ServingFindings, ServingMetricsOnForwardPassSteps) {
  const DeviceReport r = only(DecodeLoop(Loop{}));
  ASSERT_TRUE(r.serving.has_value());
  // 4 iterations over a 400 us window: 10,000 iterations per second; 28 us of kernels each.
  EXPECT_NEAR(r.serving->iterations_per_s, 10'000.0, 1e-6);
  EXPECT_NEAR(r.serving->gpu_ms_per_iteration, 0.028, 1e-9);
  ASSERT_TRUE(r.serving->tokens_per_iteration_mean.has_value());
  EXPECT_DOUBLE_EQ(*r.serving->tokens_per_iteration_mean, 1.0);
}

// A rule's own result on a trace, before the runner drops estimates under 1%.
template <typename Rule>
std::optional<Finding> RunRule(const Trace& t, Rule rule) {
  const HostIndex host(t);
  StepDetection steps = detect_steps(t, "");
  drop_warmup_steps(steps);
  const DeviceContext ctx(t, host, 0, steps);
  const DeviceReport r = only(t);
  std::vector<KernelCategory> categories;
  std::vector<Precision> precisions;
  for (const Kernel* k : ctx.kernels) {
    categories.push_back(classify_kernel(t.strings.view(k->name)));
    precisions.push_back(precision_from_kernel_name(t.strings.view(k->name)));
  }
  const CopyStats copies;
  return rule(FindingContext{ctx, r, categories, precisions, copies});
}

TEST(ServingFindings, VocabularyNotAMultipleOfEightIsNamedAndMemoryBoundGainsNothing) {
  Loop l;
  l.n = 50257;  // GPT-2's vocabulary: the LM head at decode.
  auto f = RunRule(DecodeLoop(l), &tensor_unfriendly_shape);
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->evidence.find("aten::addmm [1, 768] x [768, 50257] (bf16): N = 50257 is not a multiple of 8 "
                             "(pad to 50304)"),
            std::string::npos)
      << f->evidence;
  EXPECT_NE(f->evidence.find("memory-bound: padding gains nothing measurable"), std::string::npos);
  EXPECT_DOUBLE_EQ(*f->est_speedup, 1.0);
  // So the runner, which drops findings under x1.01, reports nothing.
  EXPECT_EQ(FindingById(only(DecodeLoop(l)), "tensor-unfriendly-shape"), nullptr);
  // Compute-bound (M = 4096): at most the tile waste, 47 of 50304 columns of the GEMM's time.
  l.m = 4096;
  f = RunRule(DecodeLoop(l), &tensor_unfriendly_shape);
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->evidence.find("compute-bound: padding gains at most"), std::string::npos) << f->evidence;
  EXPECT_NEAR(*f->est_speedup, 100.0 / (100.0 - 20.0 * 47.0 / 50304.0), 1e-9);
}

TEST(ServingFindings, OddDimensionComparedWithTheAlignedGemmsOfTheSameRun) {
  // The LM head [256, 768] x [768, 50257] next to an aligned [256, 768] x [768, 3072] GEMM. On
  // the H100 (989.4 TFLOP/s bf16, 3.35 TB/s) their roofline times are bytes-bound: 103.3 MB ->
  // 30.8 us and 6.68 MB -> 1.99 us. The aligned one takes 4 us (50% of its roofline).
  const double roof_head = 2.0 * (256 * 768 + 768 * 50257.0 + 256 * 50257.0) / 3.35e6;
  const double roof_aligned = 2.0 * (256 * 768 + 768 * 3072.0 + 256 * 3072.0) / 3.35e6;
  Loop l;
  l.m = 256;
  l.n = 50257;
  l.aligned_n = 3072;
  l.aligned_us = 4;
  // At 90 us the head is at 34% of its roofline: padded, it would take roof / 0.50.
  l.gemm_us = 90;
  auto f = RunRule(DecodeLoop(l), &tensor_unfriendly_shape);
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->evidence.find("N = 50257 is not a multiple of 8 (pad to 50304)"), std::string::npos) << f->evidence;
  EXPECT_NE(f->evidence.find("34% of its roofline against 50% for the aligned bf16 GEMMs here: padding saves "
                             "about"),
            std::string::npos)
      << f->evidence;
  const double saved = 90 - roof_head / (roof_aligned / 4);
  EXPECT_NEAR(*f->est_speedup, 100.0 / (100.0 - saved), 0.01);
  // As close to its roofline as the aligned GEMM: nothing to gain, said so.
  l.gemm_us = roof_head / (roof_aligned / 4);
  f = RunRule(DecodeLoop(l), &tensor_unfriendly_shape);
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->evidence.find("padding gains nothing measurable"), std::string::npos) << f->evidence;
  EXPECT_NEAR(*f->est_speedup, 1.0, 1e-3);
}

TEST(ServingFindings, OddDimensionInComputeBoundGemmsGainsAtMostTheTileWaste) {
  // K = 1002 in bf16 (intensity ~805 FLOP/B, above the H100's ridge of ~295): rounded up to
  // 1024, 22/1024 of each compute-bound GEMM's time is tile waste.
  Loop l;
  l.m = 8192;
  l.n = 8192;
  l.k = 1002;
  l.training = true;
  // The rule's own result: x1.004 is under the runner's 1% floor.
  const auto f = RunRule(DecodeLoop(l), &tensor_unfriendly_shape);
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->evidence.find("aten::addmm [8192, 1002] x [1002, 8192] (bf16): K = 1002 is not a multiple "
                             "of 8 (pad to 1024)"),
            std::string::npos)
      << f->evidence;
  EXPECT_NE(f->evidence.find("compute-bound"), std::string::npos);
  // 20 us per 100 us step, 22/1024 of it saved.
  EXPECT_NEAR(*f->est_speedup, 100.0 / (100.0 - 20.0 * 22.0 / 1024.0), 1e-6);
}

// precision-fp32 on a GEMM of known shape: the same roofline efficiency in bf16 as in fp32. A
// GEMM of 8 rows (the weight's 4096 x 4096 read once, 4 bytes an element) is memory-bound in
// both types: bf16 halves its bytes, so its 20 us become 10, not 20 / 14.8. One of 8192 rows is
// compute-bound in both: the peaks' ratio. TF32 alone gains nothing on the memory-bound one.
TEST(ServingFindings, Fp32GemmsShortenByTheirRooflineRatio) {
  Loop l;
  l.training = true;
  l.dtype = "float";
  l.gemm_kernel =
      "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_"
      "kernel_trt";
  l.n = 4096;
  l.k = 4096;
  l.m = 8;
  const auto skinny = RunRule(DecodeLoop(l), &precision_fp32);
  ASSERT_TRUE(skinny.has_value());
  EXPECT_NE(skinny->evidence.find("100% of that time is GEMMs of known shape"), std::string::npos) << skinny->evidence;
  EXPECT_NEAR(*skinny->est_speedup, 100.0 / (100.0 - 10.0), 1e-6);
  ASSERT_EQ(skinny->est_speedup_of_fix.size(), 1u);
  EXPECT_EQ(skinny->est_speedup_of_fix[0].first, "tf32");
  EXPECT_NEAR(skinny->est_speedup_of_fix[0].second, 1.0, 1e-9);
  l.m = 8192;
  const auto square = RunRule(DecodeLoop(l), &precision_fp32);
  ASSERT_TRUE(square.has_value());
  const double ratio =
      *peak_tflops("NVIDIA H100 80GB HBM3", Precision::kFp32) / *peak_tflops("NVIDIA H100 80GB HBM3", Precision::kBf16);
  EXPECT_NEAR(*square->est_speedup, 100.0 / (100.0 - 20.0 * (1 - ratio)), 1e-6);
}

TEST(ServingFindings, Fp8NeedsSixteenAndTf32Four) {
  Loop l;
  l.m = 8192;
  l.n = 8192;
  l.k = 100;  // A multiple of 4: tf32 is fine.
  l.training = true;
  l.dtype = "float";
  l.gemm_kernel = "sm90_xmma_gemm_tf32f32_tf32f32_f32";
  EXPECT_EQ(FindingById(only(DecodeLoop(l)), "tensor-unfriendly-shape"), nullptr);
  l.k = 104;  // A multiple of 8, not of 16: fp8 is not.
  l.dtype = "c10::Float8_e4m3fn";
  l.gemm_kernel = "sm90_xmma_gemm_e4m3e4m3_bf16f32";
  const auto f = RunRule(DecodeLoop(l), &tensor_unfriendly_shape);
  ASSERT_TRUE(f.has_value());
  EXPECT_NE(f->evidence.find("K = 104 is not a multiple of 16"), std::string::npos) << f->evidence;
}

}  // namespace
}  // namespace gpuscope
