// Idle attribution (idle.cpp) and the idle-cause findings.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include <fmt/core.h>

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

// Profiler steps of 1000 us: the main process's DataLoader for 800 us, then a 100 us kernel
// launched at 850 us.
void add_loader_steps(TraceBuilder& b, int steps) {
  for (int s = 0; s < steps; ++s) {
    const double t = s * 1000.0;
    b.annotation(t, t + 1000, fmt::format("ProfilerStep#{}", s + 1));
    b.annotation(t, t + 800, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    b.kernel(t + 900, t + 1000, "gemm", 1000, 0, 7, t + 850, 5);
  }
}

// Two steps of a data-parallel program on gloo: backward's kernels, then 800 us while the
// collective runs on the CPU, then the optimizer's kernel. Step ranges 0-1000 and 1000-2000.
// The launching thread (tid 1) shows only the step range; `side` adds what another thread of
// the process shows for each gap (tid 2).
TraceBuilder gloo_steps(const std::function<void(TraceBuilder&, double)>& side) {
  TraceBuilder b;
  for (int s = 0; s < 3; ++s) {
    const double t = s * 1000.0;
    b.annotation(t, t + 1000, fmt::format("ProfilerStep#{}", s + 1));
    b.kernel(t + 10, t + 100, "gemm", 1000, 0, 7, t + 5, 5);
    b.kernel(t + 900, t + 1000, "multi_tensor_apply_kernel", 1000, 0, 7, t + 895, 5);
    side(b, t);
  }
  return b;
}

// PyTorch's profiler names ProcessGroupGloo's work on its worker thread: the GPU idle while it
// runs is the collective's, and the advice is NCCL, not launch or host work.
TEST(Analysis, IdleWhileAnotherThreadRunsAGlooCollectiveIsCollective) {
  const auto r =
      only(gloo_steps([](TraceBuilder& b, double t) { b.annotation(t + 110, t + 880, "gloo:all_reduce", 2); }).build());
  EXPECT_NEAR(static_cast<double>(cause(r, "collective").ns), 2 * 770'000.0, 1.0);
  const Finding* f = FindingById(r, "collective-wait");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "The GPU waits for collectives that gloo runs on the CPU");
  EXPECT_NE(f->recommendation.find("Use the NCCL backend for CUDA tensors"), std::string::npos) << f->recommendation;
  EXPECT_EQ(r.findings.front().id, "collective-wait");
  EXPECT_EQ(FindingById(r, "launch-bound"), nullptr);
}

// A capture has no gloo ranges; the bootstrap's mark says the CUDA collectives run on gloo, and
// gloo's worker thread (no kernel launches) shows the CPU all-reduce as the time between its
// synchronisation on the copy out and its copy back. Without the mark that is not evidence.
TEST(Analysis, GloosCpuAllReduceInACaptureIsCollective) {
  for (const bool marked : {true, false}) {
    TraceBuilder b = gloo_steps([](TraceBuilder& b, double t) {
      b.api(t + 105, t + 120, "cudaStreamSynchronize", 2);
      b.api(t + 860, t + 870, "cudaMemcpyAsync", 2);
    });
    if (marked) b.annotation(1, 1, "gpuscope.host#dist_world_size=2,dist_gloo=1");
    const auto r = only(b.build());
    if (marked) {
      EXPECT_NEAR(static_cast<double>(cause(r, "collective").ns), 2 * 740'000.0, 1.0);
      ASSERT_NE(FindingById(r, "collective-wait"), nullptr);
    } else {
      EXPECT_EQ(cause(r, "collective").ns, 0);
      EXPECT_EQ(FindingById(r, "collective-wait"), nullptr);
    }
  }
}

TEST(Analysis, InputIdleIsAttributedToDataLoading) {
  TraceBuilder b;
  add_loader_steps(b, 2);
  const auto r = only(b.build());
  EXPECT_EQ(r.step_source, "profiler_step");
  EXPECT_EQ(r.step_count, 1);  // From the first step's kernel to the second's.
  EXPECT_NEAR(*r.step_mean_ms, 1.0, 1e-9);
  EXPECT_NEAR(r.busy_pct, 10.0, 1e-9);
  EXPECT_NEAR(cause(r, "input").pct, 90.0 - cause(r, "launch").pct - cause(r, "host").pct, 1e-9);
  EXPECT_GT(cause(r, "input").pct, 79.0);  // 800 of 900 idle us per step are inside the loader.
  EXPECT_NEAR(idle_sum_pct(r), r.idle_pct, 1e-9);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().id, "input-bound");
  // Removing the input idle time would leave window - input.
  const double w = static_cast<double>(r.window_ns);
  EXPECT_NEAR(*r.findings.front().est_speedup, w / (w - cause(r, "input").ns), 1e-9);
  EXPECT_EQ(r.findings.front().severity, Severity::kHigh);
  // The timeline strip: 96 slices; the loader fills the first 80% of each step, kernels the
  // last 10%.
  ASSERT_EQ(r.timeline.size(), 96u);
  // On the device timeline the analysed step runs from its first kernel to the next step's:
  // kernels first, then the next step's loading.
  EXPECT_EQ(r.timeline.front(), 'K');
  EXPECT_EQ(r.timeline[50], 'i');
  const auto kernels = std::count(r.timeline.begin(), r.timeline.end(), 'K');
  EXPECT_GE(kernels, 9);
  EXPECT_LE(kernels, 11);
}

// A 100 us kernel at 0, the host in cudaDeviceSynchronize over [wait_from, wait_to), and the
// next 100 us kernel at `next`, launched at `launch_at`.
DeviceReport kernels_around_a_wait(double wait_from, double wait_to, double next, double launch_at) {
  TraceBuilder b;
  b.kernel(0, 100, "gemm", 1000, 0, 7, 0, 5);
  b.api(wait_from, wait_to, "cudaDeviceSynchronize");
  b.kernel(next, next + 100, "gemm", 1000, 0, 7, launch_at, 5);
  return only(b.build());
}

TEST(Analysis, SyncIdleBeginsWhenTheHostWaits) {
  // The host waits from before the kernel ends, then runs Python for ~190 us and launches the
  // next kernel at 295.
  const auto r = kernels_around_a_wait(10, 102, 300, 295);
  EXPECT_NEAR(r.busy_pct, 200.0 / 400.0 * 100.0, 1e-9);
  // The whole gap [100, 300), the next launch call included, is due to the sync that drained
  // the queue: without it the host would have queued that launch long before.
  EXPECT_NEAR(cause(r, "sync").ns, 200'000, 1);
  EXPECT_NEAR(cause(r, "launch").ns, 0, 1);
  EXPECT_NEAR(idle_sum_pct(r), r.idle_pct, 1e-9);
  EXPECT_EQ(r.findings.front().id, "host-sync");
}

// .item() after every tiny kernel, once backward is done: the first read drains the queue (its
// gap begins in the wait); then each 3 us kernel is done before the host reaches the next read,
// so each gap (32 us) begins before the wait. From the wait on, the gap is the wait's: without
// the reads the host would have stayed ahead.
TEST(Analysis, ScalarReadsAfterTinyKernelsAreTheSyncsIdle) {
  TraceBuilder b;
  b.kernel(0, 100, "gemm", 1000, 0, 7, 0, 5);
  b.api(10, 102, "cudaStreamSynchronize");
  for (int i = 0; i < 10; ++i) {
    const double t = 100 + i * 35.0;
    b.kernel(t + 8, t + 11, "reduce_kernel", 1000, 0, 7, t, 7);
    b.api(t + 17, t + 22, "cudaStreamSynchronize");
  }
  const auto r = only(b.build());
  // [100, 108) begins in the first wait; then nine gaps of 32 us: [11, 17) before the wait
  // stays the host's; [17, 43), the wait, the Python after it and the next launch call, is
  // the sync's.
  EXPECT_NEAR(cause(r, "sync").ns, 8'000 + 9 * 26'000, 1);
  EXPECT_NEAR(cause(r, "launch").ns, 0, 1);
  EXPECT_NEAR(idle_sum_pct(r), r.idle_pct, 1e-9);
  EXPECT_NE(FindingById(r, "host-sync"), nullptr);
}

// A host that was never ahead (tiny kernels launched one by one, then a synchronize it reaches
// after the GPU is done): the gaps stay the launches'.
TEST(Analysis, ASynchronizeInALaunchBoundLoopLeavesItsGapsToLaunches) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    const double t = i * 35.0;
    b.kernel(t + 8, t + 11, "reduce_kernel", 1000, 0, 7, t, 7);
    b.api(t + 17, t + 22, "cudaStreamSynchronize");
  }
  const auto r = only(b.build());
  EXPECT_NEAR(cause(r, "sync").ns, 0, 1);
}

// A wait in a gap of host work longer than an issuing stretch (numpy between steps, then a
// synchronize on the way) leaves the gap to that work.
TEST(Analysis, AWaitInsideLongHostWorkLeavesTheGapToIt) {
  const auto r = kernels_around_a_wait(150, 160, 3000, 2990);
  EXPECT_NEAR(cause(r, "sync").ns, 0, 1);
  EXPECT_GT(cause(r, "host").ns + cause(r, "other").ns, 2'800'000);
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
  for (int i = 0; i < 100; ++i)
    b.kernel(i * 10.0 + 8, i * 10.0 + 10, "vectorized_elementwise_kernel", 1000, 0, 7, i * 10.0, 8);
  const auto r = only(b.build());
  EXPECT_NEAR(r.busy_pct, 200.0 / 992.0 * 100.0, 1e-6);
  EXPECT_GT(cause(r, "launch").pct, 79.0);
  EXPECT_EQ(r.launch.kernels_under_10us, 100);
  ASSERT_TRUE(r.launch.shorter_than_launch_pct.has_value());
  EXPECT_NEAR(*r.launch.shorter_than_launch_pct, 100.0, 1e-9);
  EXPECT_EQ(r.findings.front().id, "launch-bound");
}

// With the bootstrap's mark of 4 torch threads in the main process, the input estimate (8
// workers as fast as the main process) is stated as an upper bound, with the other end: workers
// 4x slower take 800 * 4 / 8 = 400 us per batch, so a step of ~500 us instead of 1000.
TEST(Analysis, InputEstimateStatesTheSingleThreadedWorkerBound) {
  TraceBuilder b;
  b.annotation(0, 0, "gpuscope.host#cpus=16,torch_threads=4");
  add_loader_steps(b, 3);
  const auto r = only(b.build());
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.id, "input-bound");
  EXPECT_NE(f.recommendation.find("as fast as the main process and 4x slower: the main process built batches "
                                  "with 4 torch threads"),
            std::string::npos)
      << f.recommendation;
  EXPECT_NE(f.recommendation.find("the estimate is the middle of that range in ratio"), std::string::npos)
      << f.recommendation;
  // Without the mark: no such statement.
  TraceBuilder plain;
  add_loader_steps(plain, 2);
  const auto p = only(plain.build());
  ASSERT_FALSE(p.findings.empty());
  EXPECT_EQ(p.findings.front().recommendation.find("range"), std::string::npos);
}

// Kernels submitted long before they could run (here every launch call returns at t=0; the
// GPU runs them 100 us apart, e.g. each waits on another stream's event or another process):
// the GPU was not waiting for the host to launch. The first 50 us after each launch call's
// end are still attributed by the host's state; the rest of each gap is `queued`.
TEST(Analysis, IdleWithTheNextKernelAlreadySubmittedIsQueuedNotLaunch) {
  TraceBuilder b;
  for (int i = 0; i < 20; ++i)
    b.kernel(100.0 + i * 100, 110.0 + i * 100, "vectorized_elementwise_kernel", 1000, 0, 7, 0, 2);
  const auto r = only(b.build());
  const double queued = cause(r, "queued").pct;
  EXPECT_GT(queued, 85.0);
  EXPECT_LT(cause(r, "launch").pct, 1.0);
  EXPECT_NEAR(idle_sum_pct(r), r.idle_pct, 1e-9);
  EXPECT_TRUE(std::none_of(r.findings.begin(), r.findings.end(),
                           [](const Finding& f) { return f.id == "launch-bound" || f.id == "host-bound"; }));
}

Trace launch_bound_steps(bool optimizer_ranges = false);

TEST(Analysis, LaunchBoundEvidenceGivesTheFixedStepTime) {
  const auto r = only(launch_bound_steps());
  ASSERT_EQ(r.step_count, 3);  // The fourth, whose end is unknown, is left out.
  EXPECT_EQ(r.steps_dropped_last, 1);
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.id, "launch-bound");
  // The fixed step in absolute terms (the kernels' 1 ms per step), beside the traced one, so a
  // user can compare it with the untraced step, and the multiplier is their ratio.
  EXPECT_NE(f.evidence.find("estimate: step 5.000 ms -> 1.000 ms"), std::string::npos) << f.evidence;
  EXPECT_NE(f.evidence.find("compare with the step time measured without the profiler"), std::string::npos)
      << f.evidence;
  ASSERT_TRUE(f.est_speedup.has_value());
  EXPECT_NEAR(*f.est_speedup, 5.0, 0.1);
}

// Four steps of 5 ms: 500 kernels of 2 us each, each launched by an 8 us call right before it;
// with `optimizer_ranges`, the last 0.2 ms of each step in an optimizer step's range.
Trace launch_bound_steps(bool optimizer_ranges) {
  TraceBuilder b;
  for (int st = 0; st < 4; ++st) {
    b.annotation(st * 5000.0, st * 5000.0 + 5000, "ProfilerStep#" + std::to_string(st + 1));
    if (optimizer_ranges) b.annotation(st * 5000.0 + 4800, st * 5000.0 + 5000, "Optimizer.step#AdamW.step");
    for (int i = 0; i < 500; ++i) {
      const double t = st * 5000.0 + i * 10.0;
      b.kernel(t + 8, t + 10, "vectorized_elementwise_kernel", 1000, 0, 7, t, 8);
    }
  }
  return b.build();
}

// The same steps with their last 20 launches inside the optimizer step (too few for
// optimizer-unfused to claim them): a CUDA graph of the whole step removes every gap (5 ms ->
// 1 ms, x5); torch.compile's reduce-overhead graphs the modules and leaves the optimizer's 20
// gaps of 8 us, 0.16 ms a step (5 ms -> 1.16 ms, at most x4.31).
TEST(Analysis, LaunchBoundGivesReduceOverheadTheModulesAlone) {
  const auto r = only(launch_bound_steps(true));
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.id, "launch-bound");
  EXPECT_NEAR(*f.est_speedup, 5.0, 0.1);
  ASSERT_EQ(f.est_speedup_of_fix.size(), 1u);
  EXPECT_EQ(f.est_speedup_of_fix[0].first, "reduce-overhead");
  EXPECT_NEAR(f.est_speedup_of_fix[0].second, 5.0 / 1.16, 0.05);
  EXPECT_NE(f.evidence.find("0.16 ms per step are inside the optimizer step"), std::string::npos) << f.evidence;
  EXPECT_NE(f.evidence.find("at most x4.31"), std::string::npos) << f.evidence;
  // Without an optimizer step in the trace, no part for reduce-overhead.
  const auto plain = only(launch_bound_steps());
  EXPECT_TRUE(plain.findings.front().est_speedup_of_fix.empty());
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
  // Every gap of the three analysed steps ends with a launch call that was still running.
  EXPECT_NEAR(static_cast<double>(*launch.tracing_ns), 1500 * 5000.0, 5000.0);
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

// Bounded windows: the Python bootstrap timed the program's own steps before the window opened
// (3 ms each, untraced). The traced steps take 5 ms, so 2 ms per step is the tracer's, taken
// from the gaps where the GPU waited on the host (here all launch gaps); it replaces the share
// from the calibrated launch cost.
TEST(Analysis, MeasuredUntracedStepSetsTheTracersShare) {
  Trace t = launch_bound_steps();
  t.tracing_cost = TracingCost{3000, 4000};  // Calibrated: 1 us per call, which the measurement replaces.
  t.strings.intern("gpuscope.host#untraced_step_us=3000,steps=8");
  const auto r = only(t);
  ASSERT_TRUE(r.untraced_step_measured_ns.has_value());
  EXPECT_EQ(*r.untraced_step_measured_ns, 3'000'000);
  ASSERT_TRUE(r.untraced_window_est_ns.has_value());
  EXPECT_NEAR(static_cast<double>(*r.untraced_window_est_ns) / r.step_count, 3.0e6, 0.01e6);
  const IdleCause& launch = cause(r, "launch");
  ASSERT_TRUE(launch.tracing_ns.has_value());
  EXPECT_NEAR(static_cast<double>(*launch.tracing_ns) / r.step_count, 2.0e6, 0.01e6);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.id, "launch-bound");
  // Untraced 3 ms, 1 ms of kernels: x3.
  EXPECT_NEAR(*f.est_speedup, 3.0, 0.05);
  EXPECT_NE(f.evidence.find("the program's step took 3.00 ms before the window opened (measured"), std::string::npos)
      << f.evidence;
}

// A host that runs ahead of the GPU ended its untraced steps every 1 ms while the GPU's events
// came 3 ms apart: the program's step is the GPU's 3 ms, not the host's 1 ms.
TEST(Analysis, MeasuredUntracedStepIsTheLongerOfHostAndDevice) {
  Trace t = launch_bound_steps();
  t.strings.intern("gpuscope.host#untraced_step_us=1000,steps=8");
  t.strings.intern("gpuscope.host#untraced_device_step_us=3000,steps=8");
  const auto r = only(t);
  ASSERT_TRUE(r.untraced_step_measured_ns.has_value());
  EXPECT_EQ(*r.untraced_step_measured_ns, 3'000'000);
  EXPECT_NEAR(static_cast<double>(*r.untraced_window_est_ns) / r.step_count, 3.0e6, 0.01e6);
}

// A measured untraced step longer than the traced one (noise on the host) takes nothing out.
TEST(Analysis, MeasuredUntracedStepAboveTheTracedOneTakesNothingOut) {
  Trace t = launch_bound_steps();
  t.strings.intern("gpuscope.host#untraced_step_us=6000,steps=3");
  const auto r = only(t);
  ASSERT_TRUE(r.untraced_window_est_ns.has_value());
  EXPECT_EQ(*r.untraced_window_est_ns, r.window_ns);
  EXPECT_EQ(cause(r, "launch").tracing_ns, 0);
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

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

// The healthy GEMM loop recorded with torch.profiler and a schedule: the host's ProfilerStep
// ranges are short (it runs far ahead), and the GPU is still busy with work launched before
// recording began, so the first recorded kernel starts 7 ms into the first step. On the device
// timeline none of that is idle.
TEST(Analysis, HostFarAheadOfTheGpuIsNotIdle) {
  testing::TraceBuilder b(132, "NVIDIA H200");
  double gpu = 7000;
  for (int s = 0; s < 4; ++s) {
    const double h = s * 200.0;
    b.annotation(h, h + 200, "ProfilerStep#" + std::to_string(s + 1));
    for (int k = 0; k < 10; ++k) {
      b.kernel(gpu, gpu + 1400, "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT", 1000, 0, 7, h + 10 + k * 15, 5);
      gpu += 1400;
    }
  }
  const auto r = testing::only(b.build());
  EXPECT_EQ(r.step_count, 3);
  EXPECT_NEAR(*r.step_mean_ms, 14.0, 1e-6);
  EXPECT_NEAR(r.busy_pct, 100.0, 1e-6);
  for (const Finding& f : r.findings) EXPECT_LT(*f.est_speedup, 1.05) << f.id << ": " << f.evidence;
}

// The same loop recorded on the H200 (testdata/pytorch/h200_gemm_profiler_schedule.json.gz,
// 2026-12-01) is checked end to end in tests/cli_test.py.

}  // namespace
}  // namespace gpuscope
