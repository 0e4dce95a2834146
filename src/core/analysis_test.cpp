#include "core/analysis.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <numeric>

#include "core/test_builder.h"

namespace gpuscope {
namespace {

using testing::TraceBuilder;

const IdleCause& cause(const DeviceReport& r, std::string_view name) {
  for (const auto& c : r.idle_causes) {
    if (c.cause == name) return c;
  }
  static IdleCause none;
  return none;
}

double idle_sum_pct(const DeviceReport& r) {
  double s = 0;
  for (const auto& c : r.idle_causes) s += c.pct;
  return s;
}

const Finding* FindingById(const DeviceReport& r, const std::string& id) {
  for (const auto& f : r.findings) if (f.id == id) return &f;
  return nullptr;
}

DeviceReport only(const Trace& t, const AnalysisOptions& o = {}) {
  auto reports = analyze_trace(t, o);
  EXPECT_EQ(reports.size(), 1u);
  return reports.empty() ? DeviceReport{} : reports.front();
}

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

TEST(Analysis, SmActiveEstimateWeighsGridAndCapsAtOne) {
  TraceBuilder b(100);
  b.kernel(0, 100, "half_grid", 50);
  const auto half = only(b.build());
  EXPECT_NEAR(half.sm_active_est_pct, 50.0, 1e-9);
  EXPECT_NEAR(half.busy_pct, 100.0, 1e-9);

  TraceBuilder c(100);
  c.kernel(0, 100, "a", 50, 0, 1);
  c.kernel(0, 100, "b", 50, 0, 2);
  c.kernel(0, 100, "c", 50, 0, 3);  // 150% demand is capped at 100%.
  EXPECT_NEAR(only(c.build()).sm_active_est_pct, 100.0, 1e-9);
}

TEST(Analysis, InputIdleIsAttributedToDataLoading) {
  TraceBuilder b;
  b.annotation(0, 1000, "ProfilerStep#1");
  b.annotation(0, 800, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  b.kernel(900, 1000, "gemm", 1000, 0, 7, 850, 5);
  b.annotation(1000, 2000, "ProfilerStep#2");
  b.annotation(1000, 1800, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  b.kernel(1900, 2000, "gemm", 1000, 0, 7, 1850, 5);
  const auto r = only(b.build());
  EXPECT_EQ(r.step_source, "profiler_step");
  EXPECT_EQ(r.step_count, 2);
  EXPECT_NEAR(*r.step_mean_ms, 1.0, 1e-9);
  EXPECT_NEAR(r.busy_pct, 10.0, 1e-9);
  EXPECT_NEAR(cause(r, "input").pct, 90.0 - cause(r, "launch").pct, 1e-9);
  EXPECT_GT(cause(r, "input").pct, 79.0);  // 800 of 900 idle us per step are inside the loader.
  EXPECT_NEAR(idle_sum_pct(r), r.idle_pct, 1e-9);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().id, "input-bound");
  // Removing the input idle time would leave window - input.
  const double w = static_cast<double>(r.window_ns);
  EXPECT_NEAR(*r.findings.front().est_speedup, w / (w - cause(r, "input").ns), 1e-9);
  EXPECT_EQ(r.findings.front().severity, "high");
  // The timeline strip: 96 slices; the loader fills the first 80% of each step, kernels the
  // last 10%.
  ASSERT_EQ(r.timeline.size(), 96u);
  EXPECT_EQ(r.timeline.front(), 'i');
  EXPECT_EQ(r.timeline.back(), 'K');
  const auto kernels = std::count(r.timeline.begin(), r.timeline.end(), 'K');
  EXPECT_GE(kernels, 9);
  EXPECT_LE(kernels, 11);
}

TEST(Analysis, SyncIdleBeginsWhenTheHostWaits) {
  TraceBuilder b;
  b.kernel(0, 100, "gemm", 1000, 0, 7, 0, 5);
  b.api(10, 102, "cudaDeviceSynchronize");
  // The host then runs Python for ~190 us and launches the next kernel at 295.
  b.kernel(300, 400, "gemm", 1000, 0, 7, 295, 5);
  const auto r = only(b.build());
  EXPECT_NEAR(r.busy_pct, 200.0 / 400.0 * 100.0, 1e-9);
  // The whole gap [100, 300), the next launch call included, is due to the sync that drained
  // the queue: without it the host would have queued that launch long before.
  EXPECT_NEAR(cause(r, "sync").ns, 200'000, 1);
  EXPECT_NEAR(cause(r, "launch").ns, 0, 1);
  EXPECT_NEAR(idle_sum_pct(r), r.idle_pct, 1e-9);
  EXPECT_EQ(r.findings.front().id, "host-sync");
}

TEST(Analysis, IdleAfterAnAllocationStallIsAllocation) {
  TraceBuilder b;
  b.kernel(0, 100, "gemm", 1000, 0, 7, 0, 5);
  b.api(90, 180, "cudaFree");  // Implicitly waits for the GPU, then frees.
  b.kernel(300, 400, "gemm", 1000, 0, 7, 295, 5);
  const auto r = only(b.build());
  EXPECT_NEAR(cause(r, "alloc").ns, 200'000, 1);  // The whole gap [100, 300).
}

TEST(Analysis, DeviceCopiesAndAllocationsAreTheirOwnCauses) {
  TraceBuilder b;
  b.kernel(0, 100, "gemm", 1000, 0, 7, 0, 5);
  b.memcpy(100, 150);  // Copy on the device while no kernel runs.
  b.api(150, 250, "cudaMalloc");
  b.kernel(300, 400, "gemm", 1000, 0, 7, 295, 5);
  const auto r = only(b.build());
  EXPECT_NEAR(cause(r, "memcpy").ns, 50'000, 1);
  // [150, 250) inside cudaMalloc; the gap began with the copy, so [250, 295) is host code.
  EXPECT_NEAR(cause(r, "alloc").ns, 100'000, 1);
  EXPECT_NEAR(r.copy_pct, 50.0 / 400.0 * 100.0, 1e-9);
  EXPECT_NEAR(idle_sum_pct(r), r.idle_pct, 1e-9);
}

TEST(Analysis, LaunchBoundLoopOfTinyKernels) {
  TraceBuilder b;
  // 100 kernels of 2 us, each launched by a 10 us call right before it.
  for (int i = 0; i < 100; ++i) b.kernel(i * 10.0 + 8, i * 10.0 + 10, "vectorized_elementwise_kernel", 1000, 0, 7, i * 10.0, 8);
  const auto r = only(b.build());
  EXPECT_NEAR(r.busy_pct, 200.0 / 992.0 * 100.0, 1e-6);
  EXPECT_GT(cause(r, "launch").pct, 79.0);
  EXPECT_EQ(r.launch.kernels_under_10us, 100);
  ASSERT_TRUE(r.launch.shorter_than_launch_pct.has_value());
  EXPECT_NEAR(*r.launch.shorter_than_launch_pct, 100.0, 1e-9);
  EXPECT_EQ(r.findings.front().id, "launch-bound");
}

Trace launch_bound_steps();

TEST(Analysis, LaunchBoundEvidenceGivesTheFixedStepTime) {
  const auto r = only(launch_bound_steps());
  ASSERT_EQ(r.step_count, 4);
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.id, "launch-bound");
  // The fixed step in absolute terms (the kernels' 1 ms per step), beside the traced one, so a
  // user can compare it with the untraced step: a tracer inflates the gaps the ratio is based on.
  EXPECT_NE(f.evidence.find("without the gaps a step would take about 1.0"), std::string::npos) << f.evidence;
  EXPECT_NE(f.evidence.find("(the traced step is 5.0"), std::string::npos) << f.evidence;
  ASSERT_TRUE(f.est_speedup.has_value());
  EXPECT_NEAR(*f.est_speedup, 5.0, 0.1);
}

// Four steps of 5 ms: 500 kernels of 2 us each, each launched by an 8 us call right before it.
Trace launch_bound_steps() {
  TraceBuilder b;
  for (int st = 0; st < 4; ++st) {
    b.annotation(st * 5000.0, st * 5000.0 + 5000, "ProfilerStep#" + std::to_string(st + 1));
    for (int i = 0; i < 500; ++i) {
      const double t = st * 5000.0 + i * 10.0;
      b.kernel(t + 8, t + 10, "vectorized_elementwise_kernel", 1000, 0, 7, t, 8);
    }
  }
  return b.build();
}

TEST(Analysis, MeasuredTracingCostComesOutOfTheLaunchBoundBase) {
  Trace t = launch_bound_steps();
  // gpuscope run measured 3 us per launch call plain and 8 us traced: untraced, each 8 us gap
  // is 3 us, a step 2.5 ms instead of 5; the fix still leaves the kernels' 1 ms.
  t.tracing_cost = TracingCost{3000, 8000};
  const auto r = only(t);
  ASSERT_TRUE(r.untraced_window_est_ns.has_value());
  const IdleCause& launch = cause(r, "launch");
  ASSERT_TRUE(launch.tracing_ns.has_value());
  // Every gap but the window's first ends with a launch call that was still running.
  EXPECT_NEAR(static_cast<double>(*launch.tracing_ns), 1999 * 5000.0, 5000.0);
  EXPECT_NEAR(static_cast<double>(*r.untraced_window_est_ns) / r.step_count, 2.5e6, 0.01e6);
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.id, "launch-bound");
  ASSERT_TRUE(f.est_speedup.has_value());
  EXPECT_NEAR(*f.est_speedup, 2.5, 0.05);
  EXPECT_NE(f.evidence.find("tracing adds 5.0 us to each launch call"), std::string::npos) << f.evidence;
  EXPECT_NE(f.evidence.find("about 2.50 ms per step untraced"), std::string::npos) << f.evidence;
  // The idle itself is reported as traced: it is what the trace shows.
  EXPECT_NEAR(launch.pct, 80.0, 0.5);
}

TEST(Analysis, TracingCostAboveTheGapsLeavesNoLaunchFinding) {
  Trace t = launch_bound_steps();
  t.tracing_cost = TracingCost{2000, 12000};  // 10 us more per call: more than each 8 us gap.
  const auto r = only(t);
  for (const Finding& f : r.findings) EXPECT_NE(f.id, "launch-bound") << f.evidence;
  ASSERT_TRUE(r.untraced_window_est_ns.has_value());
  EXPECT_NEAR(static_cast<double>(*r.untraced_window_est_ns) / r.step_count, 1.0e6, 0.01e6);
}

TEST(Analysis, TracingCostIsTakenFromTheEndOfTheGap) {
  TraceBuilder b;
  // A 100 us gap: the host prepares input for 97 us (an annotation), then a 3 us launch call
  // that ends it. A measured cost of 5 us per launch takes the 3 us of launch idle and 2 us of
  // the input idle before it, never more than a cause has.
  for (int i = 0; i < 10; ++i) {
    const double t = i * 200.0;
    b.kernel(t, t + 100, "gemm", 1000, 0, 7, t - 3, 3);
    b.annotation(t + 100, t + 197, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  }
  Trace trace = b.build();
  trace.tracing_cost = TracingCost{3000, 8000};
  const auto r = only(trace);
  const IdleCause& launch = cause(r, "launch");
  const IdleCause& input = cause(r, "input");
  ASSERT_TRUE(launch.tracing_ns && input.tracing_ns);
  EXPECT_LE(*launch.tracing_ns, launch.ns);
  EXPECT_NEAR(static_cast<double>(*launch.tracing_ns), 9 * 3000.0, 1000.0);
  EXPECT_NEAR(static_cast<double>(*input.tracing_ns), 9 * 2000.0, 1000.0);
}

TEST(Analysis, WithoutAMeasuredCostNothingIsTakenOut) {
  const auto r = only(launch_bound_steps());
  EXPECT_FALSE(r.untraced_window_est_ns.has_value());
  EXPECT_FALSE(cause(r, "launch").tracing_ns.has_value());
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

TEST(Analysis, NoHostInformationIsOther) {
  Trace t;
  t.devices.push_back({0, "NVIDIA A100-SXM4-80GB", 108});
  for (int i = 0; i < 2; ++i) {
    Kernel k;
    k.start_ns = i * 1000;
    k.end_ns = i * 1000 + 500;
    k.name = t.strings.intern("gemm");
    t.kernels.push_back(k);
  }
  t.sort_events();
  const auto r = only(t);
  EXPECT_NEAR(cause(r, "other").pct, r.idle_pct, 1e-9);
  EXPECT_FALSE(r.launch.shorter_than_launch.has_value());  // Unknown, not zero.
  EXPECT_FALSE(r.mfu_pct.has_value());
  EXPECT_FALSE(r.hfu_pct.has_value());
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
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_NEAR(r.steps[1].busy_pct, 0.0, 1e-9);
  EXPECT_NEAR(r.steps[0].busy_pct, 80.0, 1e-9);
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
}

TEST(Analysis, RecurringElementwiseChainsAreFusionCandidates) {
  TraceBuilder b;
  b.annotation(0, 240, "ProfilerStep#1");  // One explicit step (else the pattern makes steps).
  double t = 0;
  for (int rep = 0; rep < 3; ++rep) {
    b.kernel(t, t + 50, "nvjet_gemm", 1000);
    t += 50;
    for (const char* k : {"vectorized_elementwise_kernel<GeluFunctor>", "vectorized_elementwise_kernel<AddFunctor>",
                          "vectorized_layer_norm_kernel"}) {
      b.kernel(t, t + 10, k, 1000);
      t += 10;
    }
  }
  const auto r = only(b.build());
  ASSERT_EQ(r.fusion.size(), 1u);
  EXPECT_EQ(r.fusion[0].occurrences, 3);
  EXPECT_EQ(r.fusion[0].kernels.size(), 3u);
  EXPECT_EQ(r.fusion[0].ns, 90'000);
  EXPECT_EQ(r.fusion[0].est_saving_ns, 60'000);  // (k-1)/k of the chain.
}

TEST(Analysis, TraceWithoutGpuWorkIsRejected) {
  TraceBuilder b;
  b.op(0, 10, "aten::add");
  std::vector<Trace> traces;
  traces.push_back(b.build());
  const Report report = analyze_traces(traces, {});
  EXPECT_TRUE(report.devices.empty());
  ASSERT_EQ(report.rejected.size(), 1u);
  EXPECT_NE(report.rejected[0].find("no GPU kernels"), std::string::npos);
}

TEST(Analysis, RankSummaryAcrossTraces) {
  std::vector<Trace> traces;
  for (int rank = 0; rank < 2; ++rank) {
    TraceBuilder b;
    b.annotation(0, 100 + rank * 100, "ProfilerStep#1");
    b.kernel(0, 50, "gemm", 1000, 0, 7, 0, 0);
    Trace t = b.build();
    t.rank = rank;
    t.source = "rank" + std::to_string(rank);
    traces.push_back(std::move(t));
  }
  const Report report = analyze_traces(traces, {});
  ASSERT_TRUE(report.ranks.has_value());
  EXPECT_EQ(report.ranks->ranks, 2);
  EXPECT_EQ(report.ranks->slowest, "rank1");
  EXPECT_NEAR(*report.ranks->step_max_ms, 0.2, 1e-9);
  EXPECT_NEAR(report.ranks->busy_min_pct, 25.0, 1e-9);
  // Rank 1's step is twice rank 0's: a straggler everyone waits for.
  ASSERT_EQ(report.ranks->findings.size(), 1u);
  EXPECT_EQ(report.ranks->findings[0].id, "straggler");
  EXPECT_NEAR(*report.ranks->findings[0].est_speedup, 0.2 / *report.ranks->step_median_ms, 1e-9);
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

TEST(Analysis, LowOccupancyFromRegisters) {
  testing::TraceBuilder b;
  Trace t = b.build();
  t.devices[0].max_threads_per_sm = 2048;
  t.devices[0].regs_per_sm = 65536;
  t.devices[0].shared_mem_per_sm_bytes = 233472;
  // 256 threads x 255 registers: one block (8 warps) of 64 per SM = 12.5% occupancy.
  Kernel k;
  k.start_ns = 0;
  k.end_ns = 100'000;
  k.name = t.strings.intern("vectorized_elementwise_kernel<Heavy>");
  k.grid = {1000, 1, 1};
  k.block = {256, 1, 1};
  k.registers_per_thread = 255;
  t.kernels.push_back(k);
  Kernel gemm = k;  // A GEMM at the same occupancy is not flagged.
  gemm.start_ns = 100'000;
  gemm.end_ns = 200'000;
  gemm.name = t.strings.intern("nvjet_sm90_gemm");
  t.kernels.push_back(gemm);
  const auto r = analyze_trace(t, {}).at(0);
  const Finding* f = FindingById(r, "low-occupancy");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.find("registers"), std::string::npos);
  EXPECT_NE(f->evidence.find("50%"), std::string::npos);  // Half of the kernel time.
  // 100 us at 12.5% -> 25 us at 50%: saves 75 of 200 us.
  EXPECT_NEAR(*f->est_speedup, 200.0 / 125.0, 1e-9);
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

TEST(Analysis, SmallGridEstimateFillsEverySmToHalfOccupancy) {
  testing::TraceBuilder b;  // 100 SMs
  Trace t = b.build();
  t.devices[0].max_threads_per_sm = 2048;
  t.devices[0].regs_per_sm = 65536;
  // 10 blocks of 256 threads (8 of 64 warps, 12.5%) for 1 ms, then 1 ms of a full grid.
  Kernel k;
  k.start_ns = 0;
  k.end_ns = 1'000'000;
  k.name = t.strings.intern("compute_kernel");
  k.grid = {10, 1, 1};
  k.block = {256, 1, 1};
  t.kernels.push_back(k);
  Kernel full = k;
  full.start_ns = 1'000'000;
  full.end_ns = 2'000'000;
  full.grid = {1000, 1, 1};
  t.kernels.push_back(full);
  Kernel tiny = k;  // one 1-block kernel of 1.5 us: already at the launch floor, saves nothing
  tiny.start_ns = 2'000'000;
  tiny.end_ns = 2'001'500;
  tiny.grid = {1, 1, 1};
  t.kernels.push_back(tiny);
  const auto r = analyze_trace(t, {}).at(0);
  const Finding* f = FindingById(r, "small-grid");
  ASSERT_NE(f, nullptr);
  // 100 SMs / 10 blocks x (50% / 12.5%) = 40x: 1 ms -> 25 us, saving 975 us of 2001.5.
  EXPECT_NEAR(*f->est_speedup, 2001.5 / (2001.5 - 975.0), 1e-6);
}

// Manual attention: softmax kernels between score GEMMs are flagged; with fused attention
// kernels dominating, or log-softmax (a loss), they are not.
Trace AttentionTrace(const char* softmax_name, const char* other_name, int64_t other_ns) {
  testing::TraceBuilder b;
  Trace t = b.build();
  int64_t at = 0;
  auto add = [&](const char* name, int64_t ns) {
    Kernel k;
    k.start_ns = at;
    k.end_ns = at + ns;
    k.name = t.strings.intern(name);
    t.kernels.push_back(k);
    at += ns;
  };
  add("sm90_xmma_gemm_bf16bf16_bf16f32", 600'000);
  add(softmax_name, 300'000);
  add(other_name, other_ns);
  add("sm90_xmma_gemm_bf16bf16_bf16f32", 100'000);
  return t;
}

TEST(Analysis, MaterialisedAttentionSoftmaxIsFlagged) {
  const Trace t = AttentionTrace("softmax_warp_forward<float>", "nvjet_gemm", 0);
  const auto r = analyze_trace(t, {}).at(0);
  const Finding* f = FindingById(r, "attention-unfused");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(*f->est_speedup, 1000.0 / 700.0, 1e-9);  // the 300 us of softmax go away
  EXPECT_NE(f->recommendation.find("scaled_dot_product_attention"), std::string::npos);
}

TEST(Analysis, NoAttentionFindingForLossSoftmaxOrWhenFusedAttentionDominates) {
  const auto loss = analyze_trace(AttentionTrace("cunn_SoftMaxForward<LogSoftMaxForwardEpilogue>", "nvjet", 0), {});
  EXPECT_EQ(FindingById(loss.at(0), "attention-unfused"), nullptr);
  const auto fused = analyze_trace(AttentionTrace("softmax_warp_forward<float>", "flash_fwd_kernel", 400'000), {});
  EXPECT_EQ(FindingById(fused.at(0), "attention-unfused"), nullptr);
}

TEST(Analysis, SmallGridLeavesCommunicationKernelsOut) {
  testing::TraceBuilder b;  // 100 SMs
  Trace t = b.build();
  t.devices[0].max_threads_per_sm = 2048;
  Kernel k;  // NCCL: 8 blocks, one per channel, by design
  k.start_ns = 0;
  k.end_ns = 1'000'000;
  k.name = t.strings.intern("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)");
  k.grid = {8, 1, 1};
  k.block = {640, 1, 1};
  t.kernels.push_back(k);
  const auto r = analyze_trace(t, {}).at(0);
  EXPECT_EQ(FindingById(r, "small-grid"), nullptr);
}

TEST(Analysis, ElementwiseOnlyLoopsSplitAtSteps) {
  testing::TraceBuilder b;
  // Four steps of Scale -> AddC -> Relu, nothing else: each step's chain is one candidate.
  for (int s = 0; s < 4; ++s) {
    const double t0 = s * 100.0;
    b.annotation(t0, t0 + 100, "step");
    b.kernel(t0 + 10, t0 + 20, "Scale(float const*, float*)", 1000, 0, 7, t0 + 1, 2);
    b.kernel(t0 + 20, t0 + 30, "AddC(float const*, float*)", 1000, 0, 7, t0 + 3, 2);
    b.kernel(t0 + 30, t0 + 40, "Relu(float const*, float*)", 1000, 0, 7, t0 + 5, 2);
  }
  const auto reports = analyze_trace(b.build(), {});
  ASSERT_EQ(reports.size(), 1u);
  ASSERT_EQ(reports[0].fusion.size(), 1u);
  EXPECT_EQ(reports[0].fusion[0].occurrences, 4);
  EXPECT_EQ(reports[0].fusion[0].kernels.size(), 3u);
}

}  // namespace
}  // namespace gpuscope
