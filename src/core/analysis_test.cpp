#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <numeric>
#include <string>

#include "core/analysis.h"
#include "core/analysis_test_util.h"
#include "core/test_builder.h"

namespace gpuscope {
namespace {

using testing::cause;
using testing::FindingById;
using testing::idle_sum_pct;
using testing::only;
using testing::TraceBuilder;

TEST(Analysis, BusyIsUnionOfKernelsAcrossStreams) {
  TraceBuilder b;
  b.kernel(0, 100, "gemm_a", 1000, 0, 7);
  b.kernel(50, 150, "gemm_b", 1000, 0, 8);  // Overlaps the first on another stream.
  b.kernel(190, 200, "gemm_c", 1000, 0, 7);
  const auto r = only(b.build());
  EXPECT_EQ(r.window_ns, 200'000);
  EXPECT_NEAR(r.busy_pct, 80.0, 1e-9);
  EXPECT_NEAR(r.idle_pct, 20.0, 1e-9);
  EXPECT_NEAR(idle_sum_pct(r), r.idle_pct, 1e-9);
}

TEST(Analysis, NoSteadyStateIsSaid) {
  // Three different kernels, no markers: no step source, so the whole activity is one window
  // and the analysis says so; a trace with steps says nothing of the kind.
  TraceBuilder b;
  b.kernel(0, 10, "init");
  b.kernel(1000, 1010, "gemm");
  b.kernel(5000, 5010, "reduce");
  const TraceAnalysis a = analyze_one_trace(b.build(), {});
  ASSERT_EQ(a.devices.size(), 1u);
  EXPECT_EQ(a.devices[0].step_source, "whole_window");
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("no steady state found on device 0"), std::string::npos) << a.warnings[0];
  TraceBuilder c;
  c.annotation(0, 100, "ProfilerStep#1").annotation(100, 200, "ProfilerStep#2");
  c.kernel(10, 50, "gemm");
  c.kernel(110, 150, "gemm");
  EXPECT_TRUE(analyze_one_trace(c.build(), {}).warnings.empty());
}

TEST(Analysis, SmActiveEstimateWeighsGridAndCapsAtOne) {
  TraceBuilder b(100);
  b.kernel(0, 100, "half_grid", 50);
  const auto half = only(b.build());
  EXPECT_NEAR(*half.sm_active_est_pct, 50.0, 1e-9);
  EXPECT_NEAR(half.busy_pct, 100.0, 1e-9);

  TraceBuilder c(100);
  c.kernel(0, 100, "a", 50, 0, 1);
  c.kernel(0, 100, "b", 50, 0, 2);
  c.kernel(0, 100, "c", 50, 0, 3);  // 150% demand is capped at 100%.
  EXPECT_NEAR(*only(c.build()).sm_active_est_pct, 100.0, 1e-9);
}

TEST(Analysis, NoSmActiveEstimateWithoutTheSmCount) {
  // With the SM count unknown every kernel counted as filling the GPU: the "estimate" was
  // utilization under another name. Now it is unknown.
  TraceBuilder b(0, "Mystery accelerator");
  b.kernel(0, 100, "small_grid", 4);
  Trace t = b.build();
  t.devices[0].num_sms.reset();
  const auto r = only(t);
  EXPECT_FALSE(r.num_sms.has_value());
  EXPECT_FALSE(r.sm_active_est_pct.has_value());
  EXPECT_NEAR(r.busy_pct, 100.0, 1e-9);
}

TEST(Analysis, OneStrayEventThatStretchesTheWindowIsNamed) {
  // One kernel at 2.9e15 us made a window of 184 years, utilization 0%, and no warning.
  TraceBuilder b;
  b.kernel(0, 100, "a");
  b.kernel(200, 300, "b");
  b.kernel(2.9e15, 2.9e15 + 10, "stray");
  const Report r = analyze_traces({b.build()}, {});
  ASSERT_EQ(r.devices.size(), 1u);
  // The stray event's warning, beside the one that no step source was found.
  const auto stray = std::find_if(r.warnings.begin(), r.warnings.end(),
                                  [](const std::string& w) { return w.find("wrong timestamp") != std::string::npos; });
  ASSERT_NE(stray, r.warnings.end());
  EXPECT_NE(stray->find("92 years long"), std::string::npos) << *stray;
  EXPECT_EQ(r.warnings.size(), 2u);

  // A trace an hour long with work throughout has no such warning.
  TraceBuilder steady;
  for (int i = 0; i <= 60; ++i) steady.kernel(i * 60e6, i * 60e6 + 100, "k");
  for (const std::string& w : analyze_traces({steady.build()}, {}).warnings)
    EXPECT_EQ(w.find("wrong timestamp"), std::string::npos) << w;
}

TEST(Analysis, StepTimeFollowsTheGpuWhenTheHostRunsAhead) {
  TraceBuilder b(132, "NVIDIA H100 80GB HBM3");
  // Three host steps of 10 us each only launch work; the GPU runs 1 ms per step.
  for (int i = 0; i < 3; ++i) {
    b.annotation(i * 10.0, i * 10.0 + 10, "ProfilerStep#" + std::to_string(i + 1));
    b.kernel(100 + i * 1000.0, 1100 + i * 1000.0, "nvjet_gemm", 1000, 0, 7, i * 10.0 + 2, 5);
  }
  AnalysisOptions o;
  o.flops_per_step = 1e12;
  const auto r = only(b.build(), o);
  EXPECT_NEAR(*r.step_mean_ms, 3000.0 / 3 / 1000.0, 1e-9);  // (3100 - 100) us / 3 steps.
  EXPECT_NEAR(*r.mfu_pct, 100.0 * 1e12 / (1e-3 * 989.4e12), 1e-9);
}

// Steps found from the kernel pattern are already on the device timeline. A program that
// replays a CUDA graph launches each replay long before the GPU runs it (here all six launch
// calls within the first 60 us, the replays 100 us apart from 1 ms on): mapping the pattern's
// steps through their launches, as host ranges, gave steps of zero length (pyzoo launch
// --fixed on the H200: 2 of 14).
TEST(Analysis, KernelPatternStepsKeepTheirDeviceSpans) {
  TraceBuilder b(132, "NVIDIA H200");
  for (int i = 0; i < 6; ++i) {
    const double at = 1000 + i * 100.0;
    b.kernel(at, at + 20, "gemm", 4, 0, 7, i * 10.0, 2);
    b.kernel(at + 25, at + 40, "relu", 4, 0, 7, i * 10.0 + 1, 2);
    b.kernel(at + 45, at + 60, "sgd", 4, 0, 7, i * 10.0 + 2, 2);
  }
  const auto r = only(b.build());
  ASSERT_EQ(r.steps.size(), 5u);
  for (const auto& s : r.steps) EXPECT_EQ(s.duration_ns, 100000);
  EXPECT_EQ(r.steps_dropped_last, 0);
  EXPECT_NEAR(*r.step_mean_ms, 0.1, 1e-9);
}

TEST(Analysis, SeveralDevicesGetSeparateReports) {
  TraceBuilder b;
  b.device(1, 132, "NVIDIA H200");
  b.kernel(0, 100, "gemm", 1000, 0);
  b.kernel(0, 50, "gemm", 1000, 1);
  b.kernel(150, 200, "gemm", 1000, 1);
  const auto reports = analyze_trace(b.build(), {});
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].device, 0);
  EXPECT_NEAR(reports[0].busy_pct, 100.0, 1e-9);
  EXPECT_EQ(reports[1].name, "NVIDIA H200");
  EXPECT_NEAR(reports[1].busy_pct, 50.0, 1e-9);
}

TEST(Analysis, StepWithoutGpuWork) {
  TraceBuilder b;
  b.annotation(0, 100, "ProfilerStep#1");
  b.kernel(10, 90, "gemm", 1000, 0, 7, 5, 5);
  b.annotation(100, 200, "ProfilerStep#2");  // Nothing launched.
  b.annotation(200, 300, "ProfilerStep#3");
  b.kernel(210, 290, "gemm", 1000, 0, 7, 205, 5);
  const auto r = only(b.build());
  // Two whole steps on the device timeline: the first from its kernel (10 us) to the second
  // step's start (100 us: it launched nothing, so its host start); the third is left out.
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps_dropped_last, 1);
  EXPECT_NEAR(r.steps[1].busy_pct, 0.0, 1e-9);
  EXPECT_NEAR(r.steps[0].busy_pct, 80.0 / 90.0 * 100.0, 1e-9);
  EXPECT_NEAR(idle_sum_pct(r), r.idle_pct, 1e-9);
}

TEST(Analysis, MatmulFlopsCountNestedOpsOnceAndGiveMfu) {
  TraceBuilder b(132, "NVIDIA H100 80GB HBM3");
  b.annotation(0, 1000, "ProfilerStep#1");
  // aten::linear -> aten::addmm: one product of [64,128] x [128,256] counted once.
  b.op(10, 100, "aten::linear", {{64, 128}, {256, 128}, {256}}, "c10::BFloat16");
  b.op(20, 90, "aten::addmm", {{256}, {64, 128}, {128, 256}}, "c10::BFloat16");
  b.kernel(50, 900, "nvjet_sm90_tst_gemm", 1000, 0, 7, 30, 5);
  b.op(100, 200, "aten::bmm", {{4, 32, 16}, {4, 16, 8}}, "c10::BFloat16");
  b.op(300, 310, "aten::mm", {}, "");  // No shapes recorded: not counted.
  AnalysisOptions o;
  o.flops_per_step = 1e9;
  const auto r = only(b.build(), o);
  const double expected = 2.0 * 64 * 128 * 256 + 2.0 * 4 * 32 * 16 * 8;
  ASSERT_TRUE(r.matmul_flops_per_step.has_value());
  EXPECT_DOUBLE_EQ(*r.matmul_flops_per_step, expected);
  ASSERT_TRUE(r.peak_tflops.has_value());
  EXPECT_DOUBLE_EQ(*r.peak_tflops, 989.4);
  const double step_s = static_cast<double>(r.window_ns) / 1e9;
  EXPECT_NEAR(*r.mfu_pct, 100.0 * 1e9 / (step_s * 989.4e12), 1e-12);
  EXPECT_NEAR(*r.hfu_pct, 100.0 * expected / (step_s * 989.4e12), 1e-12);
  ASSERT_EQ(r.precision.size(), 1u);
  EXPECT_EQ(r.precision[0].dtype, "bf16");  // From the launching op's dtype.
}

TEST(Analysis, PrecisionFromKernelNameAndFp32Finding) {
  TraceBuilder b;
  b.kernel(0, 400, "sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n", 1000);
  b.kernel(400, 1000, "cutlass_80_simt_sgemm_256x128_8x4_nn_align1", 1000);
  const auto r = only(b.build());
  ASSERT_EQ(r.precision.size(), 2u);
  EXPECT_EQ(r.precision[0].dtype, "fp32");
  EXPECT_NEAR(r.precision[0].pct, 60.0, 1e-9);
  EXPECT_EQ(r.precision[1].dtype, "tf32");
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().id, "precision-fp32");
  // H100 SXM: fp32 GEMMs speed up by 989.4/67 (dense bf16 over fp32), tf32 by 2.
  const double saved = 600 * (1 - 67 / 989.4) + 400 * 0.5;
  EXPECT_NEAR(*r.findings.front().est_speedup, 1000.0 / (1000.0 - saved), 1e-9);
  // TF32 alone moves only the fp32 GEMM, to TF32's peak (494.7 TFLOP/s); the TF32 one stays.
  ASSERT_EQ(r.findings.front().est_speedup_of_fix.size(), 1u);
  EXPECT_EQ(r.findings.front().est_speedup_of_fix[0].first, "tf32");
  EXPECT_NEAR(r.findings.front().est_speedup_of_fix[0].second, 1000.0 / (1000.0 - 600 * (1 - 67 / 494.7)), 1e-3);
}

// One explicit step (else the pattern makes steps) of three repeats: a 50 us GEMM, then the
// chain's kernels of 10 us each.
TraceBuilder gemm_then_chain(std::initializer_list<const char*> chain) {
  TraceBuilder b;
  b.annotation(0, 3 * (50.0 + 10.0 * static_cast<double>(chain.size())), "ProfilerStep#1");
  double t = 0;
  for (int rep = 0; rep < 3; ++rep) {
    b.kernel(t, t + 50, "nvjet_gemm", 1000);
    t += 50;
    for (const char* k : chain) {
      b.kernel(t, t + 10, k, 1000);
      t += 10;
    }
  }
  return b;
}

constexpr std::initializer_list<const char*> kGeluAddNorm = {"vectorized_elementwise_kernel<GeluFunctor>",
                                                             "vectorized_elementwise_kernel<AddFunctor>",
                                                             "vectorized_layer_norm_kernel"};

TEST(Analysis, RecurringElementwiseChainsAreFusionCandidates) {
  const auto r = only(gemm_then_chain(kGeluAddNorm).build());
  ASSERT_EQ(r.fusion.size(), 1u);
  EXPECT_EQ(r.fusion[0].occurrences, 3);
  EXPECT_EQ(r.fusion[0].kernels.size(), 3u);
  EXPECT_EQ(r.fusion[0].ns, 90'000);
  // Fused, the chain keeps its LayerNorm (10 us of 30 each time): 20 us saved per chain.
  EXPECT_EQ(r.fusion[0].est_saving_ns, 60'000);
}

// A compiler folds pointwise kernels into their neighbours, but each reduction stays a kernel
// of its own: a LayerNorm backward (input gradient, then weight and bias gradients over the
// other dimension) between a multiply and an add saves the pointwise kernels' time only,
// 2 x 10 of 60 us each time, not three quarters of it. A chain without a reduction costs one
// kernel's time fused: its mean.
TEST(Analysis, FusedChainsKeepTheirReductions) {
  TraceBuilder b;
  for (int rep = 0; rep < 4; ++rep) {
    double t = 300.0 * rep;
    b.annotation(t, t + 300, "ProfilerStep#" + std::to_string(rep + 1));
    b.kernel(t, t + 50, "nvjet_gemm", 1000);
    t += 50;
    for (const auto& [name, us] :
         {std::pair{"vectorized_elementwise_kernel<MulFunctor>", 10.0},
          {"void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<float, float>()", 20.0},
          {"void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<float, "
           "float, 32u, 8u, true, false>()",
           20.0},
          {"vectorized_elementwise_kernel<AddFunctor>", 10.0}}) {
      b.kernel(t, t + us, name, 1000);
      t += us;
    }
    b.kernel(t, t + 50, "nvjet_gemm", 1000);
    t += 50;
    b.kernel(t, t + 10, "vectorized_elementwise_kernel<GeluFunctor>", 1000);
    b.kernel(t + 10, t + 30, "vectorized_elementwise_kernel<MulFunctor>", 1000);
  }
  const auto r = only(b.build());
  ASSERT_EQ(r.fusion.size(), 2u);
  const FusionCandidate& norm = r.fusion[0];
  ASSERT_EQ(norm.kernels.size(), 4u);
  ASSERT_GE(norm.occurrences, 3);
  EXPECT_EQ(norm.ns, norm.occurrences * 60'000);
  EXPECT_EQ(norm.est_saving_ns, norm.occurrences * 20'000);
  const FusionCandidate& pointwise = r.fusion[1];
  ASSERT_EQ(pointwise.kernels.size(), 2u);
  EXPECT_EQ(pointwise.est_saving_ns, pointwise.occurrences * 15'000);  // 30 us each time, fused 15 (the mean).
}

// Kernels no compiler fuses with the model's elementwise work end a chain: a foreach kernel
// (the optimizer's multi_tensor_apply_kernel, which torch.compile of the model leaves eager) and
// cuDNN's layout conversions around a convolution (bf16 NCHW tensors: nchwToNhwc before the
// kernel, nhwcToNchw after, inside the convolution call). GELU -> breaker -> Add -> LayerNorm
// leaves the chain Add -> LayerNorm.
TEST(Analysis, KernelsNoCompilerFusesEndFusionChains) {
  for (const char* breaker :
       {"void at::native::multi_tensor_apply_kernel<TensorListMetadata<2>, BinaryOpListAlphaFunctor>",
        "void cudnn::engines_precompiled::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, false, true, "
        "(cudnnKernelDataType_t)0>"}) {
    const auto r = only(gemm_then_chain({"vectorized_elementwise_kernel<GeluFunctor>", breaker,
                                         "vectorized_elementwise_kernel<AddFunctor>", "vectorized_layer_norm_kernel"})
                            .build());
    ASSERT_EQ(r.fusion.size(), 1u) << breaker;
    EXPECT_EQ(r.fusion[0].kernels.size(), 2u) << breaker;
    EXPECT_EQ(r.fusion[0].kernels[0], "vectorized_elementwise_kernel<AddFunctor>") << breaker;
    EXPECT_EQ(r.fusion[0].occurrences, 3) << breaker;
  }
}

// Where the GPU waits for the host, a shorter kernel saves nothing: it only lengthens the wait.
// Each repeat's GEMM and chain are launched 10 us before the repeat starts (queued), but after
// the chain the GPU waits 100 us for the next GEMM, launched as it starts. Of the time of the
// window's N repeats' chain kernels with a next kernel (the last one has none), the GELUs and
// Adds are followed by queued work (N x 20 us), the LayerNorms before a wait are not (N - 1 of
// 10 us): the chains' saving counts 20 N / (30 N - 10) of it. (The GEMMs, queued too, are not
// what fusion shortens.)
TEST(Analysis, ShorterKernelsSaveOnlyWhereTheGpuPacedTheStep) {
  TraceBuilder b;
  for (int rep = 0; rep < 3; ++rep) {
    const double t = 100 + 190.0 * rep;
    b.annotation(t - 5, t + 185, "ProfilerStep#" + std::to_string(rep + 1));
    b.kernel(t, t + 50, "nvjet_gemm", 1000, 0, 7, t - 5);
    double k = t + 50;
    for (const char* name : kGeluAddNorm) {
      b.kernel(k, k + 10, name, 1000, 0, 7, t - 10);
      k += 10;
    }
  }
  const DeviceReport r = only(b.build());
  const Finding* f = FindingById(r, "kernel-fusion");
  ASSERT_NE(f, nullptr);
  const double window = static_cast<double>(r.window_ns);
  const double n = window / 190'000.0;
  ASSERT_EQ(n, 2.0);  // The last repeat is a partial step, left out.
  ASSERT_EQ(r.fusion.size(), 1u);
  const double paced = 20.0 * n / (30.0 * n - 10.0);  // 40 / 50
  EXPECT_NEAR(*f->est_speedup, window / (window - static_cast<double>(r.fusion[0].est_saving_ns) * paced), 1e-9);
  EXPECT_NE(f->evidence.find("next kernel queued after 80% of these kernels' time"), std::string::npos) << f->evidence;
}

// The share is of the kernels a fix shortens: here the fp32 GEMMs (3 x 200 us) and the first
// small kernel after them are launched ahead and run queued, while the 9 other small kernels
// run as the host launches them (10 us apart): most of the kernels wait for the host, the GEMMs
// never do. Bf16 saves all of the GEMMs' saving, with no paced clause.
TEST(Analysis, PacedShareIsOfTheKernelsTheFixShortens) {
  TraceBuilder b;
  for (int g = 0; g < 3; ++g)
    b.kernel(200.0 * g, 200.0 * g + 200, "cutlass_80_simt_sgemm_256x128_8x4_nn_align1", 1000, 0, 7, 1);
  for (int e = 0; e < 10; ++e) {
    b.kernel(610.0 + 10 * e, 618.0 + 10 * e, "vectorized_elementwise_kernel<AddFunctor>", 1000, 0, 7, e == 0 ? 1 : -1);
  }
  const auto r = only(b.build());
  const Finding* f = FindingById(r, "precision-fp32");
  ASSERT_NE(f, nullptr);
  const double window = static_cast<double>(r.window_ns) / 1e3;
  EXPECT_NEAR(*f->est_speedup, window / (window - 600 * (1 - 67 / 989.4)), 1e-9);
  EXPECT_EQ(f->evidence.find("queued after"), std::string::npos) << f->evidence;
}

// The chains of the first test above save 60 us of the window (over x1.3), but a copy on a side
// stream lasts the whole step: the step cannot get shorter than its copies, so fusing gains
// nothing and makes no finding.
TEST(Analysis, FusionCannotShortenAStepBelowItsCopies) {
  const DeviceReport plain = only(gemm_then_chain(kGeluAddNorm).build());
  const Finding* f = FindingById(plain, "kernel-fusion");
  ASSERT_NE(f, nullptr);
  EXPECT_GT(f->est_speedup.value_or(0), 1.3);
  TraceBuilder b = gemm_then_chain(kGeluAddNorm);
  b.memcpy(0, 240, CopyKind::kHtoD, HostMemory::kPinned);
  EXPECT_EQ(FindingById(only(b.build()), "kernel-fusion"), nullptr);
}

TEST(Analysis, TraceWithoutGpuWorkIsDescribedNotRejected) {
  TraceBuilder b;
  b.op(0, 10, "aten::add");
  std::vector<Trace> traces;
  traces.push_back(b.build());
  const Report report = analyze_traces(traces, {});
  EXPECT_TRUE(report.devices.empty());
  EXPECT_TRUE(report.rejected.empty());
  ASSERT_EQ(report.without_gpu_work.size(), 1u);
  EXPECT_NE(report.without_gpu_work[0].find("no GPU kernels"), std::string::npos);
}

TEST(Analysis, RankSummaryAcrossTraces) {
  std::vector<Trace> traces;
  for (int rank = 0; rank < 2; ++rank) {
    TraceBuilder b;
    b.annotation(0, 100 + rank * 100, "ProfilerStep#1");
    b.kernel(0, 50, "gemm", 1000, 0, 7, 0, 0);
    Trace t = b.build();
    t.rank = rank;
    t.world_size = 2;  // A job: ranks with their world size (ranks.h, job_disagreement).
    t.source = "rank" + std::to_string(rank);
    traces.push_back(std::move(t));
  }
  const Report report = analyze_traces(traces, {});
  ASSERT_TRUE(report.ranks.has_value());
  EXPECT_EQ(report.ranks->ranks, 2);
  EXPECT_EQ(report.ranks->slowest, "rank1");
  EXPECT_NEAR(*report.ranks->step_max_ms, 0.2, 1e-9);
  EXPECT_NEAR(report.ranks->busy_min_pct, 25.0, 1e-9);
  // Rank 1's step is twice rank 0's: a straggler everyone waits for (largest first; each GPU
  // idles half its step or more, so scale-before-healthy follows).
  ASSERT_GE(report.ranks->findings.size(), 1u);
  EXPECT_EQ(report.ranks->findings[0].id, "straggler");
  EXPECT_NEAR(*report.ranks->findings[0].est_speedup, 0.2 / *report.ranks->step_median_ms, 1e-9);
}

// GPM readings lag the kernel timeline (about 0.1 s on H100 and H200): samples every 100 ms whose
// SM active describes the 100 ms that ended `lag` before their label.
Trace busy_then_idle(double busy_from_s, double busy_to_s, double lag_s, double sample_to_s, bool whole_run = true) {
  testing::TraceBuilder b;
  b.device(0, 132, "NVIDIA H100 80GB HBM3");
  // A start-up kernel and a last one far from the busy stretch, as a whole run records them (a
  // bounded window records only its own).
  if (whole_run) b.kernel(50'000, 50'100, "vectorized_elementwise_kernel");
  for (double t = busy_from_s; t < busy_to_s; t += 0.001) b.kernel(t * 1e6, t * 1e6 + 900, "sm90_xmma_gemm_bf16");
  // Steps of 20 ms over the busy stretch: the window.
  int n = 0;
  for (double t = busy_from_s; t + 0.0199 < busy_to_s; t += 0.02)
    b.annotation(t * 1e6, (t + 0.02) * 1e6, "ProfilerStep#" + std::to_string(++n));
  if (whole_run) b.kernel(sample_to_s * 1e6 - 100, sample_to_s * 1e6, "vectorized_elementwise_kernel");
  Trace trace = b.build();
  for (double t = 0.1; t <= sample_to_s; t += 0.1) {
    const double a = t - 0.1 - lag_s, e = t - lag_s;  // what the reading describes
    const double busy = std::max(0.0, std::min(e, busy_to_s) - std::max(a, busy_from_s)) / 0.1;
    DeviceSample s;
    s.time_ns = static_cast<int64_t>(t * 1e9);
    s.interval_ns = 100'000'000;
    s.sm_active_pct = 90 * busy;
    s.gpu_util_pct = 100 * busy;
    trace.device_samples.push_back(s);
  }
  return trace;
}

TEST(Hardware, ReadingsAreAlignedWithTheKernelsByTheirMeasuredLag) {
  // A second of kernels (90% of a kernel's time fills the SMs) among idle time: the lag is told
  // by the edges, and the mean over the window is the busy second's.
  const DeviceReport r = testing::only(busy_then_idle(1.0, 2.0, 0.12, 3.0));
  ASSERT_TRUE(r.hw_sample_lag_ns.has_value());
  EXPECT_NEAR(static_cast<double>(*r.hw_sample_lag_ns), 120e6, 10e6);
  ASSERT_TRUE(r.hw_sm_active_pct.has_value());
  EXPECT_NEAR(*r.hw_sm_active_pct, 90, 6);
  // Read as labelled, the window's samples would mix in the idle time before it (~79%).
  EXPECT_GT(*r.hw_sm_active_pct, 85);
}

TEST(Hardware, AShortWindowWhoseReadingsTurnOnTheirAlignmentIsUnmeasured) {
  // A bounded window of 80 ms of kernels, nothing recorded around it: no lag can be told, and
  // the window's mean moves from 0 to 90% with it. Unmeasured (null), never the idle time around
  // the window.
  const DeviceReport r = testing::only(busy_then_idle(1.0, 1.08, 0.12, 2.0, false));
  EXPECT_FALSE(r.hw_sample_lag_ns.has_value());
  EXPECT_FALSE(r.hw_sm_active_pct.has_value());
  EXPECT_FALSE(r.hw_gpu_util_pct.has_value());
  // The same recorded whole: the lag is told by the edges, but no 100 ms sample lies (90% of it)
  // inside 80 ms: still unmeasured. A 300 ms stretch holds two: its own reading.
  const DeviceReport whole = testing::only(busy_then_idle(1.0, 1.08, 0.12, 2.0));
  ASSERT_TRUE(whole.hw_sample_lag_ns.has_value());
  EXPECT_FALSE(whole.hw_sm_active_pct.has_value());
  const DeviceReport longer = testing::only(busy_then_idle(1.0, 1.3, 0.12, 2.0));
  ASSERT_TRUE(longer.hw_sm_active_pct.has_value());
  EXPECT_NEAR(*longer.hw_sm_active_pct, 90, 3);
}

}  // namespace
}  // namespace gpuscope
