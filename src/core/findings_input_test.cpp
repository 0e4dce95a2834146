// The input-bound finding (findings_input.cpp): its estimate without and with the Python
// bootstrap's per-batch loader marks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <fmt/core.h>

#include "core/analysis_test_util.h"
#include "core/test_builder.h"

namespace gpuscope {
namespace {

using testing::cause;
using testing::FindingById;
using testing::only;
using testing::TraceBuilder;

// Three profiler steps of 1000 us: the main process's DataLoader for 800 us, then a 100 us
// kernel at 900 us. On the device timeline the window runs from the first kernel (900) to the
// last step's (2900): 2000 us, two steps, each with 800 us of input idle.
TraceBuilder loader_steps() {
  TraceBuilder b;
  for (int s = 0; s < 3; ++s) {
    const double t = s * 1000.0;
    b.annotation(t, t + 1000, fmt::format("ProfilerStep#{}", s + 1));
    b.annotation(t, t + 800, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    b.kernel(t + 900, t + 1000, "gemm", 1000, 0, 7, t + 850, 5);
  }
  return b;
}

// The bootstrap's mark after a batch: an NVTX mark, so a zero-length annotation.
void batch_mark(TraceBuilder& b, double at_us, int cpu_us, int wall_us) {
  b.annotation(at_us, at_us, fmt::format("gpuscope.host#loader_cpu_us={},loader_wall_us={}", cpu_us, wall_us));
}

// The report's input-bound finding (r must outlive the reference).
const Finding& input_finding(const DeviceReport& r) {
  EXPECT_EQ(r.window_ns, 2'000'000);
  EXPECT_EQ(cause(r, "input").ns, 1'600'000);
  const Finding* f = FindingById(r, "input-bound");
  if (!f) ADD_FAILURE() << "no input-bound finding";
  static const Finding kNone;
  return f ? *f : kNone;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Without the marks, 8 workers as fast as the main process: the step becomes
// max(2000 - 1600, 1600 / 8) = 400 us of the 2000, x5.00.
TEST(InputBound, WithoutLoaderMarksWorkersAreAsFastAsTheMainProcess) {
  const DeviceReport r = only(loader_steps().build());
  const Finding& f = input_finding(r);
  EXPECT_NEAR(*f.est_speedup, 5.0, 1e-9);
  EXPECT_TRUE(has(f.evidence, "; 8 loader workers would hide the input entirely: about 0.20 ms per step (est.)"))
      << f.evidence;
  EXPECT_FALSE(has(f.evidence, "of CPU per batch")) << f.evidence;
  EXPECT_TRUE(has(f.recommendation, "Estimate assumes 8 workers, each as fast as the main process."))
      << f.recommendation;
}

// The main process spent 3200 us of CPU per 800 us batch (4 threads' worth). The fast end,
// workers as fast as the main process: max(400, 1600 / 8) = 400 us, x5.00. The slow end, a
// worker needing all 3200 us on its one thread: max(400, 1600 * 4 / 8) = 800 us, x2.50. The
// headline is the middle in ratio, sqrt(5.00 * 2.50) = x3.54 (a step of 566 us).
// The medians are of the marks inside the window, (3000, 3200, 9000) us of CPU over (700, 800,
// 900) us; the one before it (the first batch, at 800 us, before the first kernel) is left out.
TEST(InputBound, LoaderMarksStateTheSlowEndFromTheCpuTime) {
  TraceBuilder b = loader_steps();
  batch_mark(b, 800, 80'000, 800);
  batch_mark(b, 1799, 3000, 700);
  batch_mark(b, 2700, 9000, 900);
  batch_mark(b, 2799, 3200, 800);
  const DeviceReport r = only(b.build());
  const Finding& f = input_finding(r);
  EXPECT_NEAR(*f.est_speedup, std::sqrt(5.0 * 2.5), 1e-9);
  EXPECT_TRUE(has(f.evidence,
                  "; the main process spent 3.20 ms of CPU per batch over 0.80 ms (4.0 threads' "
                  "worth; median of 3 batches); with 8 loader workers the step would take about 0.28 ms "
                  "(est.), hiding the input entirely about 0.20 ms"))
      << f.evidence;
  EXPECT_TRUE(has(f.recommendation, "num_workers=8 ")) << f.recommendation;
  EXPECT_TRUE(has(f.recommendation, "needing all the 3.20 ms of CPU the main process spent per batch"))
      << f.recommendation;
  EXPECT_TRUE(has(f.recommendation, ": x2.50 to x5.00, the estimate the middle of that range in ratio"))
      << f.recommendation;
}

// The bootstrap timed batches on one thread in a forked copy (what a worker is): 2000 us each,
// 2.5 times the main process's 800 us wall. The step with 8 workers: max(400, 1600 * 2.5 / 8) =
// 500 us of the 2000, x4.00; no range.
TEST(InputBound, AOneThreadCopyMeasuresTheWorkersCost) {
  TraceBuilder b = loader_steps();
  b.annotation(0, 0, "gpuscope.host#loader_one_thread_us=2000,batches=3");
  batch_mark(b, 1799, 3200, 800);
  batch_mark(b, 2799, 3200, 800);
  const DeviceReport r = only(b.build());
  const Finding& f = input_finding(r);
  EXPECT_NEAR(*f.est_speedup, 4.0, 1e-9);
  EXPECT_TRUE(has(f.evidence,
                  "; a batch took 2.00 ms on one thread in a forked copy of the process (what a worker "
                  "does; 3 batches timed before the first step); with 8 loader workers the step would "
                  "take about 0.25 ms (est.)"))
      << f.evidence;
  EXPECT_TRUE(has(f.recommendation,
                  "Estimate assumes 8 workers, each building a batch in the 2.00 ms measured on "
                  "one thread, alone ("))
      << f.recommendation;
  EXPECT_FALSE(has(f.recommendation, "middle of that range")) << f.recommendation;
}

// The same copy spent 8000 us of CPU per 2000 us batch with torch on one thread: a thread pool
// outside torch (numpy's BLAS) that workers keep. The estimate stands, as an upper bound with the
// pools limited, and the advice says to limit them; a copy whose CPU time is its wall time does
// not get that.
TEST(InputBound, ACopyThatKeptAThreadPoolBusyAdvisesLimitingIt) {
  for (const int cpu_us : {8000, 2100}) {
    TraceBuilder b = loader_steps();
    b.annotation(0, 0, "gpuscope.host#cpus=17,torch_threads=4");
    b.annotation(0, 0,
                 fmt::format("gpuscope.host#loader_one_thread_us=2000,batches=3,loader_one_thread_cpu_us={}", cpu_us));
    batch_mark(b, 1799, 3200, 800);
    batch_mark(b, 2799, 3200, 800);
    const DeviceReport r = only(b.build());
    const Finding& f = input_finding(r);
    EXPECT_NEAR(*f.est_speedup, 4.0, 1e-9) << cpu_us;
    const bool pool = cpu_us == 8000;
    EXPECT_EQ(has(f.evidence,
                  "; that copy ran torch on one thread yet spent 8.00 ms of CPU per batch, 4.0 threads' worth: a "
                  "thread pool outside torch (numpy's BLAS, OpenMP), which DataLoader workers do not limit, so 8 "
                  "workers would keep about 32 threads busy on 17 CPUs"),
              pool)
        << f.evidence;
    EXPECT_EQ(has(f.recommendation, "threadpoolctl.threadpool_limits(1)"), pool) << f.recommendation;
    EXPECT_EQ(has(f.recommendation, "with their thread pools so limited (an upper bound"), pool) << f.recommendation;
  }
}

// Then the copy ran a DataLoader with 6 workers: a batch every 600 us, not the 2000 / 6 = 333 us
// one worker's time alone would give (workers share the CPUs; each batch goes through shared
// memory and is copied as pinning would). The step: max(400, 1600 * 600 / 800) = 1200 us of
// the 2000, x1.67; the pool's worker count is the advice's.
TEST(InputBound, WorkersTimedTogetherReplaceOneWorkersCost) {
  TraceBuilder b = loader_steps();
  b.annotation(0, 0, "gpuscope.host#cpus=7,torch_threads=6");
  b.annotation(0, 0, "gpuscope.host#loader_one_thread_us=2000,batches=3");
  b.annotation(0, 0, "gpuscope.host#loader_pool_us=600,pool_workers=6,batches=18");
  batch_mark(b, 1799, 3200, 800);
  batch_mark(b, 2799, 3200, 800);
  const DeviceReport r = only(b.build());
  const Finding& f = input_finding(r);
  EXPECT_NEAR(*f.est_speedup, 2000.0 / 1200.0, 1e-9);
  EXPECT_TRUE(has(f.evidence,
                  "a batch took 2.00 ms on one thread, and a DataLoader with 6 workers over the same "
                  "data delivered one every 0.60 ms (18 batches, each copied as pinning would); with 6 "
                  "loader workers the step would take about 0.60 ms (est.), hiding the input entirely "
                  "about 0.20 ms"))
      << f.evidence;
  EXPECT_TRUE(has(f.recommendation, "num_workers=6 ")) << f.recommendation;
  EXPECT_TRUE(has(f.recommendation,
                  "Estimate assumes 6 workers, delivering a batch every 0.60 ms as they did in "
                  "the copy"))
      << f.recommendation;
  EXPECT_FALSE(has(f.recommendation, "upper bound")) << f.recommendation;
}

// With 5 CPUs, 4 workers beside the main process: max(400, 1600 / 4) = 400 us, x5.00; the slow
// end max(400, 1600 * 4 / 4) = 1600 us, x1.25; the headline sqrt(5.00 * 1.25) = x2.50.
TEST(InputBound, WorkersAreCappedByTheCpusBesideTheMainProcess) {
  TraceBuilder b = loader_steps();
  b.annotation(0, 0, "gpuscope.host#cpus=5,torch_threads=4");
  batch_mark(b, 1799, 3200, 800);
  batch_mark(b, 2799, 3200, 800);
  const DeviceReport r = only(b.build());
  const Finding& f = input_finding(r);
  EXPECT_NEAR(*f.est_speedup, 2.5, 1e-9);
  EXPECT_TRUE(has(f.evidence, "with 4 loader workers the step would take about 0.40 ms")) << f.evidence;
  EXPECT_TRUE(has(f.recommendation, "num_workers=4 ")) << f.recommendation;
  EXPECT_TRUE(has(f.recommendation, ": x1.25 to x5.00, the estimate")) << f.recommendation;
  EXPECT_TRUE(has(f.recommendation, "as many as the 5 CPUs here leave beside the main process")) << f.recommendation;
  // The measured CPU time replaces the torch-threads range.
  EXPECT_FALSE(has(f.recommendation, "upper bound here")) << f.recommendation;
}

// Less CPU than wall time (the loader waited on files): a worker still takes the wall time.
// With 2 CPUs, one worker: max(400, 1600 * 1 / 1) = 1600 us, x1.25 (not 1600 * 0.5, x2.50), and
// no slow end beyond it.
TEST(InputBound, AWorkerIsNeverFasterThanTheMainProcess) {
  TraceBuilder b = loader_steps();
  b.annotation(0, 0, "gpuscope.host#cpus=2,torch_threads=1");
  batch_mark(b, 1799, 400, 800);
  const DeviceReport r = only(b.build());
  const Finding& f = input_finding(r);
  EXPECT_NEAR(*f.est_speedup, 1.25, 1e-9);
  EXPECT_TRUE(has(f.evidence, "spent 0.40 ms of CPU per batch over 0.80 ms (0.5 threads' worth; median of 1 batch)"))
      << f.evidence;
  EXPECT_FALSE(has(f.recommendation, "the fast end")) << f.recommendation;
}

// No mark inside the window: all of them are used (here the first batch's, before the window,
// 3 threads' worth): the slow end max(400, 1600 * 3 / 8) = 600 us of the 2000, x3.33; the
// headline sqrt(5.00 * 3.33) = x4.08.
TEST(InputBound, MarksOutsideTheWindowAreUsedWhenNoneIsInside) {
  TraceBuilder b = loader_steps();
  batch_mark(b, 800, 2400, 800);
  const DeviceReport r = only(b.build());
  const Finding& f = input_finding(r);
  EXPECT_NEAR(*f.est_speedup, std::sqrt(5.0 * 2000.0 / 600.0), 1e-9);
  EXPECT_TRUE(has(f.evidence, "(3.0 threads' worth; median of 1 batch)")) << f.evidence;
  EXPECT_TRUE(has(f.recommendation, ": x3.33 to x5.00")) << f.recommendation;
}

// The loader already has workers (PyTorch's multi-process iterator) and the step still waits:
// no advice to add workers or pin memory, which the program does; the estimate is the bound,
// the input hidden entirely: 2000 / (2000 - 1600), x5.00.
TraceBuilder worker_loader_steps(bool mark) {
  TraceBuilder b;
  for (int s = 0; s < 3; ++s) {
    const double t = s * 1000.0;
    b.annotation(t, t + 1000, fmt::format("ProfilerStep#{}", s + 1));
    b.annotation(t, t + 800, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__");
    b.kernel(t + 900, t + 1000, "gemm", 1000, 0, 7, t + 850, 5);
  }
  if (mark) b.annotation(0, 0, "gpuscope.host#cpus=16,loader_workers=8");
  return b;
}

TEST(InputBound, WorkersThatDoNotKeepUpAreNotToldToAddWorkers) {
  {
    const DeviceReport r = only(worker_loader_steps(false).build());
    const Finding& f = input_finding(r);
    EXPECT_NEAR(*f.est_speedup, 5.0, 1e-9);
    EXPECT_EQ(f.title, "The GPU waits for the DataLoader's workers");
    EXPECT_TRUE(has(f.evidence, "already runs worker processes (its multi-process iterator)")) << f.evidence;
    EXPECT_TRUE(has(f.evidence, "about 0.20 ms (an upper bound)")) << f.evidence;
    EXPECT_FALSE(has(f.recommendation, "num_workers=")) << f.recommendation;
    EXPECT_FALSE(has(f.recommendation, "pin_memory")) << f.recommendation;
  }
  const DeviceReport r = only(worker_loader_steps(true).build());
  const Finding& f = input_finding(r);
  EXPECT_TRUE(has(f.evidence, "already runs 8 worker processes")) << f.evidence;
  EXPECT_TRUE(has(f.recommendation, "(8 workers on 16 CPUs here)")) << f.recommendation;
}

// Two workers where 8 would be advised (9 CPUs), and the bootstrap's copy timed 8 together: a
// batch every 300 us. The window's two batches need 600 us at least: max(400, 2 x 300) = 600
// us of the 2000, x3.33, a prediction; the advice names the workers to add.
TEST(InputBound, TooFewWorkersGetThePaceTheAdvisedOnesKept) {
  TraceBuilder b = worker_loader_steps(false);
  b.annotation(0, 0, "gpuscope.host#cpus=9,loader_workers=2");
  b.annotation(0, 0, "gpuscope.host#loader_pool_us=300,pool_workers=8,batches=24");
  const DeviceReport r = only(b.build());
  const Finding& f = input_finding(r);
  EXPECT_NEAR(*f.est_speedup, 2000.0 / 600.0, 1e-9);
  EXPECT_EQ(f.title, "The GPU waits for the DataLoader's workers: too few of them");
  EXPECT_TRUE(has(f.evidence,
                  "the DataLoader runs 2 worker processes and the step still waits for its batches. In "
                  "a forked copy of the process (before the first step) a DataLoader with 8 workers over "
                  "the same data delivered a batch every 0.30 ms (24 batches, each copied as pinning "
                  "would); with 8 workers the step would take about 0.30 ms (est.), hiding the input "
                  "entirely about 0.20 ms"))
      << f.evidence;
  EXPECT_TRUE(has(f.recommendation,
                  "Raise the DataLoader's num_workers from 2 to 8 (one per CPU beside the main "
                  "process: 9 CPUs here, at most 8)"))
      << f.recommendation;
  // As many workers as the copy timed already: the bound, as before.
  TraceBuilder enough = worker_loader_steps(false);
  enough.annotation(0, 0, "gpuscope.host#cpus=9,loader_workers=8");
  enough.annotation(0, 0, "gpuscope.host#loader_pool_us=300,pool_workers=8,batches=24");
  const DeviceReport r8 = only(enough.build());
  const Finding& f8 = input_finding(r8);
  EXPECT_EQ(f8.title, "The GPU waits for the DataLoader's workers");
  EXPECT_NEAR(*f8.est_speedup, 5.0, 1e-9);
}

// A bounded window whose untraced step was measured while the workers' prefetched batches
// lasted (0.5 ms, against 1 ms traced): that difference is not taken out of the input waits, as
// a traced main process does not slow the workers. Only the 100 us host gap of each step takes
// a share (all of it): untraced, 1800 us with the 1600 us of input waits, x9.00.
TEST(InputBound, TheTracersMeasuredShareLeavesInputWaitsAlone) {
  TraceBuilder b = worker_loader_steps(true);
  b.annotation(0, 0, "gpuscope.host#untraced_step_us=500,steps=8");
  const DeviceReport r = only(b.build());
  ASSERT_TRUE(r.untraced_step_measured_ns.has_value());
  EXPECT_EQ(cause(r, "input").tracing_ns.value_or(-1), 0);
  EXPECT_EQ(r.untraced_window_est_ns, 1'800'000);
  const Finding& f = input_finding(r);
  EXPECT_NEAR(*f.est_speedup, 9.0, 1e-9);
}

// A window that also builds batches in the main process (a second loader without workers) gets
// the usual advice: the workers are not the whole story.
TEST(InputBound, BatchesBuiltInTheMainProcessToo) {
  TraceBuilder b = worker_loader_steps(true);
  b.annotation(1000, 1050, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  const DeviceReport r = only(b.build());
  const Finding* f = FindingById(r, "input-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "The GPU waits for the host to prepare input");
}

// Marks without both numbers, with a zero wall time, or with the keys inside other keys are
// not measurements: the estimate is the one without marks, x5.00.
TEST(InputBound, MalformedLoaderMarksAreIgnored) {
  TraceBuilder b = loader_steps();
  b.annotation(1799, 1799, "gpuscope.host#loader_cpu_us=,loader_wall_us=800");
  b.annotation(1799, 1799, "gpuscope.host#loader_cpu_us=3200");
  b.annotation(1799, 1799, "gpuscope.host#xloader_cpu_us=3200,xloader_wall_us=800");
  b.annotation(1799, 1799, "gpuscope.host#loader_cpu_us=99999999999999999999,loader_wall_us=0");
  const DeviceReport r = only(b.build());
  const Finding& f = input_finding(r);
  EXPECT_NEAR(*f.est_speedup, 5.0, 1e-9);
  EXPECT_FALSE(has(f.evidence, "of CPU per batch")) << f.evidence;
}

}  // namespace
}  // namespace gpuscope
