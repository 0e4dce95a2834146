// Findings must not contradict the trace they come from: each test builds the smallest trace
// of a class where a rule used to claim something the trace shows is not so.
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdio>
#include <optional>
#include <string>

#include "core/analysis.h"
#include "core/analysis_test_util.h"
#include "core/findings.h"
#include "core/test_builder.h"

namespace gpuscope {
namespace {

using testing::cause;
using testing::FindingById;
using testing::only;
using testing::TraceBuilder;

// The step before and after that a finding's evidence prints ("; estimate: step A ms -> B ms").
std::pair<double, double> printed_estimate(const Finding& f) {
  const size_t at = f.evidence.find(kEstimatePrefix);
  EXPECT_NE(at, std::string::npos) << f.evidence;
  if (at == std::string::npos) return {0, 0};
  const std::string tail = f.evidence.substr(at);
  double a = 0, b = 0;
  char what[32];
  EXPECT_EQ(std::sscanf(tail.c_str(), "; estimate: %31s %lf ms -> %lf ms", what, &a, &b), 3) << tail;
  return {a, b};
}

// Steps of 500 us: 200 us of data preparation on the CPU (an op that launches nothing), then
// ten 2 us kernels, each launched by a 10 us call inside the model's forward op after 15 us of
// its own host code. The kernels run shorter than their launch calls: a CUDA graph removes the
// launches and the forward's code that issues them, not the data preparation.
Trace launch_and_host_gaps() {
  TraceBuilder b;
  for (int step = 0; step < 6; ++step) {
    const double s = 100 + step * 500.0;
    b.annotation(s, s + 500, "ProfilerStep#" + std::to_string(step));
    b.op(s, s + 200, "prepare_batch_on_cpu");
    b.op(s + 499, s + 499, "autograd::engine::evaluate_function: AddBackward0");  // Training, not serving.
    for (int i = 0; i < 10; ++i) {
      const double t = s + 200 + i * 27.0;
      b.op(t, t + 12, "model.py:12 forward");       // Its code between launches...
      b.op(t + 12, t + 25, "model.py:12 forward");  // ...and the same code issuing a launch.
      b.kernel(t + 26, t + 28, "vectorized_elementwise_kernel<Add>", 1000, 0, 7, t + 15, 10);
    }
  }
  return b.build();
}

TEST(Contradictions, LaunchAndHostFindingsClaimEachGapOnce) {
  const DeviceReport r = only(launch_and_host_gaps());
  const Finding* launch = FindingById(r, "launch-bound");
  const Finding* host = FindingById(r, "host-bound");
  ASSERT_NE(launch, nullptr);
  ASSERT_NE(host, nullptr);
  // The time the two fixes save together is no more than the idle time they name.
  const double saved = (1 - 1 / *launch->est_speedup) + (1 - 1 / *host->est_speedup);
  const double idle = (cause(r, "launch").pct + cause(r, "host").pct) / 100;
  EXPECT_LE(saved, idle + 1e-9);
  // The data preparation stays host-bound's, the Python between launches is launch-bound's.
  EXPECT_NE(host->evidence.find("launch-bound's"), std::string::npos) << host->evidence;
  EXPECT_NE(host->evidence.find("prepare_batch_on_cpu"), std::string::npos) << host->evidence;
  EXPECT_NE(launch->evidence.find("go too"), std::string::npos) << launch->evidence;
  // Each multiplier follows from the step its evidence prints.
  for (const Finding* f : {launch, host}) {
    const auto [before, after] = printed_estimate(*f);
    EXPECT_NEAR(before / after, *f->est_speedup, 0.01 * *f->est_speedup) << f->evidence;
  }
}

// The same steps with kernels of 20 us, longer than their launch calls: the step is not bound
// by issuing, so launch-bound does not claim the host gaps at the forward's code. Those gaps are
// still not "code that issues no GPU work": host-bound says they are the framework's per-op
// work, and names them in its title where they are most of its gaps (no data preparation).
TEST(Contradictions, HostGapsAtTheCodeThatLaunchesAreNotCalledCodeWithoutGpuWork) {
  for (const double prepare_us : {0.0, 200.0}) {
    TraceBuilder b;
    for (int step = 0; step < 6; ++step) {
      const double len = prepare_us + 365;
      const double s = 100 + step * len;
      b.annotation(s, s + len, "ProfilerStep#" + std::to_string(step));
      if (prepare_us > 0) b.op(s, s + prepare_us, "prepare_batch_on_cpu");
      b.op(s + len - 1, s + len - 1, "autograd::engine::evaluate_function: AddBackward0");
      for (int i = 0; i < 10; ++i) {
        const double t = s + prepare_us + i * 36.0;
        b.op(t, t + 15, "model.py:12 forward");
        b.op(t + 15, t + 25, "model.py:12 forward");
        b.kernel(t + 26, t + 46, "vectorized_elementwise_kernel<Add>", 1000, 0, 7, t + 15, 10);
      }
    }
    const DeviceReport r = only(b.build());
    const Finding* host = FindingById(r, "host-bound");
    ASSERT_NE(host, nullptr) << prepare_us;
    EXPECT_EQ(host->evidence.find("launch-bound's"), std::string::npos) << host->evidence;
    EXPECT_NE(host->evidence.find("at code that also issues the step's kernels"), std::string::npos) << host->evidence;
    EXPECT_NE(host->recommendation.find("CUDA graph of the step"), std::string::npos) << host->recommendation;
    const bool issuing_title = host->title.find("between launches") != std::string::npos;
    EXPECT_EQ(issuing_title, prepare_us == 0) << host->title;
  }
}

// Steps of 3.6 ms, as `gpuscope run` records them (no profiler ops): 3 ms of numpy on the CPU
// (no GPU call), then twenty 2 us kernels, each launched by a 10 us call after 15 us of the
// model's Python. One Python sample a step, taken among the launches, names the stack until the
// next one, so it also labels the next step's numpy time: a label alone does not make host time
// code that issues launches.
Trace numpy_between_launch_bursts() {
  TraceBuilder b;
  for (int step = 0; step < 6; ++step) {
    const double s = 100 + step * 3600.0;
    b.annotation(s, s + 3600, "ProfilerStep#" + std::to_string(step));
    b.op(s + 3599, s + 3599, "autograd::engine::evaluate_function: AddBackward0");  // Training.
    for (int i = 0; i < 20; ++i) {
      const double t = s + 3000 + i * 27.0;
      b.kernel(t + 26, t + 28, "vectorized_elementwise_kernel<Add>", 1000, 0, 7, t + 15, 10);
    }
    b.annotation(s + 3100, s + 3100, "gpuscope.py#;train.py:30 forward");
  }
  return b.build();
}

TEST(Contradictions, HostCodeThatIssuesNoLaunchIsNotLaunchBoundsWhateverSampleNamesIt) {
  const DeviceReport r = only(numpy_between_launch_bursts());
  const Finding* host = FindingById(r, "host-bound");
  ASSERT_NE(host, nullptr);
  // The numpy time (3 ms of a 3.6 ms step) stays host-bound's: a CUDA graph does not replay it.
  EXPECT_EQ(host->evidence.find("launch-bound's"), std::string::npos) << host->evidence;
  EXPECT_GT(*host->est_speedup, 3.0);
  if (const Finding* launch = FindingById(r, "launch-bound")) {
    EXPECT_EQ(launch->evidence.find("go too"), std::string::npos) << launch->evidence;
    EXPECT_LT(*launch->est_speedup, *host->est_speedup);
  }
}

// Ten layers a step, each a 200 us kernel followed by a read of one statistic into pageable
// memory (`.tolist()`: cudaMemcpyAsync of 4 bytes, device to host), which returns only once the
// copy is done; then 40 us of Python and the next layer's launch. The GPU idles after every read
// because the host waited for it: a synchronisation, not a copy stall or host code.
TEST(Contradictions, ScalarReadIntoPageableMemoryIsASynchronisation) {
  TraceBuilder b;
  double t = 100;
  for (int step = 0; step < 6; ++step) {
    b.annotation(t, t + 10 * 262, "ProfilerStep#" + std::to_string(step));
    for (int layer = 0; layer < 10; ++layer) {
      b.kernel(t + 12, t + 212, "ampere_sgemm_128x64_nn", 1000, 0, 7, t, 10);
      const uint64_t corr = b.correlation();
      b.memcpy(t + 213, t + 215, CopyKind::kDtoH, HostMemory::kPageable, 0, 4, corr);
      b.api(t + 11, t + 220, "cudaMemcpyAsync", 1, corr);
      b.api(t + 220, t + 221, "cudaStreamSynchronize");
      t += 262;  // 40 us of Python, then the next layer's launch.
    }
    b.op(t - 1, t - 1, "autograd::engine::evaluate_function: AddBackward0");  // Training.
  }
  const DeviceReport r = only(b.build());
  EXPECT_GT(cause(r, "sync").pct, cause(r, "host").pct);
  EXPECT_GT(cause(r, "sync").pct, cause(r, "launch").pct);
  const Finding* sync = FindingById(r, "host-sync");
  ASSERT_NE(sync, nullptr);
  // Without the reads the host (52 us a layer) runs ahead of the GPU (202 us a layer): the step
  // is the kernels and copies, 2.02 ms of 2.62.
  EXPECT_NEAR(*sync->est_speedup, 2620.0 / 2020.0, 0.02);
  const Finding* copy = FindingById(r, "memcpy");
  if (copy) {
    EXPECT_LT(*copy->est_speedup, *sync->est_speedup);
  }
}

// 200 iterations of a 20 us kernel launched 5 us ahead, the GPU busy; one launch call of the
// middle takes 300 ms (first-launch code loading) and a cudaFree takes 5 s.
Trace steady_loop_with_one_offs(bool with_free) {
  TraceBuilder b;
  double t = 100;
  for (int i = 0; i < 200; ++i) {
    const double launch_us = i == 100 ? 300'000 : 5;
    b.kernel(t + launch_us, t + launch_us + 20, "ampere_sgemm_128x64_nn", 1000, 0, 7, t, launch_us);
    t += launch_us + 21;
  }
  for (int i = 0; i < 3; ++i) b.api(t + i * 20, t + i * 20 + 10, "cudaMalloc");
  if (with_free) {
    b.api(t + 100, t + 100 + 5e6, "cudaFree");
    t += 5e6 + 200;
  }
  b.kernel(t + 5, t + 25, "ampere_sgemm_128x64_nn", 1000, 0, 7, t, 5);
  return b.build();
}

TEST(Contradictions, OneOffCallsAreStartUpNotSteadyState) {
  for (const bool with_free : {false, true}) {
    const Trace trace = steady_loop_with_one_offs(with_free);
    const TraceAnalysis a = analyze_one_trace(trace, {});
    ASSERT_EQ(a.devices.size(), 1u);
    const DeviceReport& r = a.devices[0];
    EXPECT_GT(r.one_off_ns, 0);
    EXPECT_EQ(FindingById(r, "launch-bound"), nullptr);
    EXPECT_EQ(FindingById(r, "allocation"), nullptr);
    const auto one_off = std::find_if(a.warnings.begin(), a.warnings.end(), [](const std::string& w) {
      return w.find("one-off calls") != std::string::npos;
    });
    ASSERT_NE(one_off, a.warnings.end());
    EXPECT_NE(one_off->find("no steady state"), std::string::npos) << *one_off;
  }
}

TEST(Contradictions, FindingsOfATraceWithoutSteadyStateAreLowConfidence) {
  // A launch-bound loop (100 launches of 30 us, kernels of 2 us: 4 ms) with a 6 ms cudaFree
  // after its tenth kernel (one-off beside 10 us cudaMallocs), then the same loop alone: the
  // finding is the same; only where start-up fills the window is it a guess.
  for (const bool start_up : {false, true}) {
    TraceBuilder b;
    double t = 100;
    for (int i = 0; i < 3; ++i, t += 20) b.api(t, t + 10, "cudaMalloc");
    for (int i = 0; i < 100; ++i, t += 40) {
      if (start_up && i == 10) {
        b.api(t, t + 6000, "cudaFree");
        t += 6000 + 10;
      }
      b.kernel(t + 30, t + 32, "elementwise_kernel", 1000, 0, 7, t, 30);
    }
    const DeviceReport r = only(b.build());
    const Finding* f = FindingById(r, "launch-bound");
    ASSERT_NE(f, nullptr) << start_up;
    EXPECT_EQ(f->severity, start_up ? Severity::kLow : Severity::kHigh);
    EXPECT_EQ(f->evidence.find("no steady state") != std::string::npos, start_up) << f->evidence;
  }
}

TEST(Contradictions, OneGapOfAWindowWithoutStepsIsNotASteadyState) {
  // Three GEMMs, then the host away for 18 ms in code that launches nothing, then one more: no
  // steps, and one gap is the window. Host-bound may be right, but nothing shows the gap recurs.
  TraceBuilder b;
  b.kernel(100, 200, "ampere_sgemm_128x64_nn");
  b.kernel(220, 320, "ampere_sgemm_128x64_nn");
  b.kernel(340, 440, "ampere_sgemm_128x64_nn");
  b.op(450, 18450, "host_work_between");
  b.kernel(18500, 18600, "ampere_sgemm_128x64_nn", 1000, 0, 7, 18480);
  const DeviceReport r = only(b.build());
  EXPECT_EQ(r.step_source, "whole_window");
  ASSERT_FALSE(r.findings.empty());
  for (const Finding& f : r.findings) {
    EXPECT_EQ(f.severity, Severity::kLow) << f.id;
    EXPECT_NE(f.evidence.find("one idle gap of"), std::string::npos) << f.evidence;
  }
  // The same gap among many short ones of a steady loop without steps: not one gap's window.
  TraceBuilder c;
  for (int i = 0; i < 400; ++i)
    c.kernel(100 + i * 40.0 + 30, 100 + i * 40.0 + 32, "elementwise_kernel", 1000, 0, 7, 100 + i * 40.0, 30);
  const DeviceReport s = only(c.build());
  EXPECT_EQ(s.step_source, "whole_window");
  for (const Finding& f : s.findings) EXPECT_EQ(f.evidence.find("one idle gap of"), std::string::npos) << f.evidence;
}

TEST(Contradictions, RepeatedLongCallsAreSteadyState) {
  // Every iteration's launch takes 30 us against a 2 us kernel: that is the loop, not start-up.
  TraceBuilder b;
  for (int i = 0; i < 100; ++i)
    b.kernel(100 + i * 40.0 + 30, 100 + i * 40.0 + 32, "elementwise_kernel", 1000, 0, 7, 100 + i * 40.0, 30);
  const DeviceReport r = only(b.build());
  EXPECT_EQ(r.one_off_ns, 0);
  EXPECT_NE(FindingById(r, "launch-bound"), nullptr);
}

// Warm-up kernels, then a capture of 400 launches (nothing runs: the graph records them), the
// graph's instantiation, and three replays of 7 kernels each.
TEST(Contradictions, CudaGraphCaptureIsNotToldToCaptureAGraph) {
  TraceBuilder b;
  double t = 100;
  for (int i = 0; i < 7; ++i, t += 30) b.kernel(t + 5, t + 25, "ampere_sgemm_128x64_nn", 1000, 0, 7, t, 5);
  b.api(t, t + 10, "cudaStreamBeginCapture");
  t += 10;
  for (int i = 0; i < 400; ++i, t += 12) b.api(t, t + 10, "cudaLaunchKernel");
  b.api(t, t + 10, "cudaStreamEndCapture");
  b.api(t + 10, t + 5000, "cudaGraphInstantiateWithFlags");
  t += 5010;
  for (int r = 0; r < 3; ++r) {
    b.api(t, t + 8, "cudaGraphLaunch");
    for (int i = 0; i < 7; ++i) b.kernel(t + 10 + i * 21, t + 30 + i * 21, "ampere_sgemm_128x64_nn", 1000, 0, 7, t, 0);
    t += 160;
  }
  const DeviceReport r = only(b.build());
  EXPECT_GT(r.one_off_ns, 0);
  for (const Finding& f : r.findings) {
    EXPECT_EQ(f.recommendation.find("capture the step in a CUDA graph"), std::string::npos) << f.id;
  }
  EXPECT_EQ(FindingById(r, "launch-bound"), nullptr);
}

// Each iteration: a 100 us kernel, then `.item()`: a blocking cudaMemcpy whose device copy
// reads 256 bytes in 4.5 us once the kernel is done; the call returns 60 us later.
TEST(Contradictions, TinyBlockingReadIsASynchronisationNotACopyStall) {
  TraceBuilder b;
  std::vector<Memcpy> copies;
  for (int i = 0; i < 20; ++i) {
    const double t = 100 + i * 300.0;
    b.kernel(t + 10, t + 110, "ampere_sgemm_128x64_nn", 1000, 0, 7, t, 5);
    b.op(t + 10, t + 175, "aten::item");
    const uint64_t corr = 100000 + i;
    b.api(t + 12, t + 174, "cudaMemcpy", 1, corr);
    Memcpy m;
    m.start_ns = TraceBuilder::ns(t + 110);
    m.end_ns = TraceBuilder::ns(t + 114.5);
    m.kind = CopyKind::kDtoH;
    m.host_memory = HostMemory::kPageable;
    m.bytes = 256;
    m.correlation = corr;
    copies.push_back(m);
  }
  Trace t = b.build();
  for (const Memcpy& m : copies) t.memcpys.push_back(m);
  t.sort_events();
  const DeviceReport r = only(t);
  EXPECT_EQ(FindingById(r, "memcpy"), nullptr);
  const Finding* sync = FindingById(r, "host-sync");
  ASSERT_NE(sync, nullptr);
  EXPECT_NE(sync->evidence.find("aten::item"), std::string::npos) << sync->evidence;
}

// Each iteration: a 20 us kernel, then a 30 us device-to-device copy.
TEST(Contradictions, DeviceToDeviceCopiesAreNotToldToPinHostMemory) {
  TraceBuilder b;
  for (int i = 0; i < 20; ++i) {
    const double t = 100 + i * 60.0;
    b.kernel(t + 5, t + 25, "ampere_sgemm_128x64_nn", 1000, 0, 7, t, 5);
    b.api(t + 20, t + 24, "cudaMemcpyAsync");
    b.memcpy(t + 26, t + 56, CopyKind::kDtoD, HostMemory::kUnknown);
  }
  const DeviceReport r = only(b.build());
  const Finding* f = FindingById(r, "memcpy");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->recommendation.find("Pin host memory"), std::string::npos) << f->recommendation;
  EXPECT_EQ(f->recommendation.find("DataLoader"), std::string::npos) << f->recommendation;
  EXPECT_NE(f->recommendation.find("between device buffers"), std::string::npos) << f->recommendation;
}

// A kernel, then a 30 us host-to-device copy the compute waits for, twenty times: from pinned
// memory (a DataLoader with pin_memory=True), from pageable memory, and from memory the trace
// does not describe. Only host memory that is not known to be pinned is told to be pinned.
TEST(Contradictions, PinnedCopiesAreNotToldToPinHostMemory) {
  for (const HostMemory memory : {HostMemory::kPinned, HostMemory::kPageable, HostMemory::kUnknown}) {
    TraceBuilder b;
    for (int i = 0; i < 20; ++i) {
      const double t = 100 + i * 60.0;
      b.kernel(t + 5, t + 25, "ampere_sgemm_128x64_nn", 1000, 0, 7, t, 5);
      b.api(t + 20, t + 24, "cudaMemcpyAsync");
      b.memcpy(t + 26, t + 56, CopyKind::kHtoD, memory);
    }
    const DeviceReport r = only(b.build());
    const Finding* f = FindingById(r, "memcpy");
    ASSERT_NE(f, nullptr);
    const bool pinned = memory == HostMemory::kPinned;
    EXPECT_EQ(f->recommendation.find("Pin host memory") == std::string::npos, pinned) << f->recommendation;
    EXPECT_EQ(f->recommendation.find("pinned already") != std::string::npos, pinned) << f->recommendation;
    EXPECT_EQ(f->evidence.find("all 20 host copies are from or to pinned memory") != std::string::npos, pinned)
        << f->evidence;
    EXPECT_NE(f->recommendation.find("non_blocking=True"), std::string::npos) << f->recommendation;
  }
}

// Two steps of an SGD step with 150 per-tensor kernels each.
TEST(Contradictions, OptimizerAdviceNamesTheOptimizerUsed) {
  TraceBuilder b;
  for (int step = 0; step < 4; ++step) {
    const double t = 100 + step * 2000.0;
    b.annotation(t, t + 2000, "ProfilerStep#" + std::to_string(step));
    b.kernel(t + 10, t + 400, "ampere_sgemm_128x64_nn", 1000, 0, 7, t + 2, 5);
    b.annotation(t + 400, t + 1900, "Optimizer.step#SGD.step");
    for (int i = 0; i < 150; ++i)
      b.kernel(t + 410 + i * 9, t + 412 + i * 9, "void sgd_update_kernel<float>", 10, 0, 7, t + 404 + i * 9, 5);
  }
  const DeviceReport r = only(b.build());
  const Finding* f = FindingById(r, "optimizer-unfused");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->recommendation.find("torch.optim.SGD("), std::string::npos) << f->recommendation;
  EXPECT_EQ(f->recommendation.find("AdamW"), std::string::npos) << f->recommendation;
}

// A step whose optimizer runs the forward and backward inside step() (a closure, as PyTorch
// Lightning's automatic optimisation and LBFGS do): 150 forward kernels launched from the
// step's thread and 150 backward kernels from autograd's, then one fused update. The forward's
// and backward's kernels are not optimizer kernels; launched from one thread, with no backward
// on another, the same 300 per-tensor kernels inside the step are, also where a helper thread
// (a prefetcher) launches a few kernels of its own meanwhile.
TEST(Contradictions, AnOptimizerStepThatRunsTheBackwardIsNotOptimizerWork) {
  for (const bool closure : {true, false}) {
    TraceBuilder b;
    for (int step = 0; step < 4; ++step) {
      const double t = 100 + step * 3000.0;
      b.annotation(t, t + 3000, "ProfilerStep#" + std::to_string(step));
      b.annotation(t + 5, t + 2990, "Optimizer.step#AdamW.step");
      for (int i = 0; i < 300; ++i) {
        const double k = t + 10 + i * 9;
        const int32_t tid = closure ? (i >= 150 ? 2 : 1) : (i % 100 == 50 ? 3 : 1);
        b.kernel(k + 6, k + 8, "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>", 10,
                 0, 7, k, 5, tid);
      }
      b.kernel(t + 2900, t + 2950, "void at::native::multi_tensor_apply_kernel<FusedAdamMathFunctor>", 100, 0, 7,
               t + 2890, 5);
    }
    const DeviceReport r = only(b.build());
    EXPECT_EQ(FindingById(r, "optimizer-unfused") == nullptr, closure) << (closure ? "closure" : "one thread");
  }
}

// Inference (no backward, no optimizer): an expert-parallel all-to-all that nothing overlaps.
TEST(Contradictions, CommunicationAdviceFitsInferenceNotDataParallelTraining) {
  TraceBuilder b;
  for (int i = 0; i < 20; ++i) {
    const double t = 100 + i * 100.0;
    b.kernel(t + 5, t + 45, "ampere_sgemm_128x64_nn", 1000, 0, 7, t, 5);
    b.kernel(t + 45, t + 95, "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", 8, 0, 9, t + 1, 5);
  }
  const DeviceReport r = only(b.build());
  const Finding* f = FindingById(r, "exposed-communication");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->recommendation.find("DDP"), std::string::npos) << f->recommendation;
  EXPECT_EQ(f->recommendation.find("FSDP"), std::string::npos) << f->recommendation;
}

// Launch-bound work inside a compiled region: no advice to use torch.compile.
TEST(Contradictions, CompiledProgramsAreNotToldToCompile) {
  TraceBuilder b;
  b.op(50, 100 + 100 * 40.0, "CompiledFunction");
  for (int i = 0; i < 100; ++i)
    b.kernel(100 + i * 40.0 + 30, 100 + i * 40.0 + 32, "elementwise_kernel", 1000, 0, 7, 100 + i * 40.0, 30);
  const DeviceReport r = only(b.build());
  ASSERT_FALSE(r.findings.empty());
  for (const Finding& f : r.findings) {
    EXPECT_EQ(f.recommendation.find("torch.compile(model)"), std::string::npos) << f.id << ": " << f.recommendation;
  }
}

// A ResNet-like step: convolutions do the matrix work, one small matmul (the classifier).
TEST(Contradictions, HfuIsNotAMeasuredZeroWhenConvolutionsDoTheWork) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    const double t = 100 + i * 1000.0;
    b.kernel(t + 5, t + 900, "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", 1000, 0, 7, t, 5);
    b.op(t + 900, t + 905, "aten::mm", {{32, 512}, {512, 1000}}, "float");
    b.kernel(t + 905, t + 910, "ampere_sgemm_128x64_nn", 1000, 0, 7, t + 900, 5);
  }
  const DeviceReport r = only(b.build());
  ASSERT_TRUE(r.matmul_flops_per_step);
  EXPECT_FALSE(r.hfu_pct);
  EXPECT_NE(r.hfu_unavailable.find("convolutions"), std::string::npos) << r.hfu_unavailable;
}

// torch.compile's output: chains of Triton kernels are already fused, not candidates.
TEST(Contradictions, TritonChainsAreNotFusionCandidates) {
  TraceBuilder b;
  for (int i = 0; i < 20; ++i) {
    const double t = 100 + i * 100.0;
    b.kernel(t + 5, t + 30, "triton_poi_fused_add_gelu_0", 1000, 0, 7, t, 5);
    b.kernel(t + 30, t + 60, "triton_red_fused_native_layer_norm_1", 1000, 0, 7, t + 1, 5);
    b.kernel(t + 60, t + 95, "ampere_sgemm_128x64_nn", 1000, 0, 7, t + 2, 5);
  }
  const DeviceReport r = only(b.build());
  EXPECT_TRUE(r.fusion.empty());
  EXPECT_EQ(FindingById(r, "kernel-fusion"), nullptr);
}

// Steps of 1 ms: a 300 us GEMM, then the host in cudaFree and cudaMalloc for 500 us while the
// GPU waits, then another GEMM; `marks` are the bootstrap's reading of PyTorch's allocator.
Trace allocation_stalls(const std::string& marks, const std::string& at_open = "") {
  TraceBuilder b;
  if (!at_open.empty()) b.annotation(50, 50, "gpuscope.host#" + at_open);
  for (int step = 0; step < 8; ++step) {
    const double s = 100 + step * 1000.0;
    b.annotation(s, s + 1000, "ProfilerStep#" + std::to_string(step));
    b.kernel(s + 5, s + 305, "ampere_sgemm_128x64_nn", 1000, 0, 7, s, 5);
    b.api(s + 310, s + 610, "cudaFree");
    b.api(s + 610, s + 810, "cudaMalloc");
    b.kernel(s + 820, s + 990, "ampere_sgemm_128x64_nn", 1000, 0, 7, s + 812, 5);
  }
  if (!marks.empty()) b.annotation(8200, 8200, "gpuscope.host#" + marks);
  return b.build();
}

double estimate_of_fix(const Finding& f, std::string_view fix) {
  for (const auto& [name, speedup] : f.est_speedup_of_fix)
    if (name == fix) return speedup;
  return 0;
}

// The allocation finding of allocation_stalls(marks, at_open), if it fires.
std::optional<Finding> allocation_finding(const std::string& marks, const std::string& at_open = "") {
  const DeviceReport r = only(allocation_stalls(marks, at_open));
  const Finding* f = FindingById(r, "allocation");
  return f ? std::optional<Finding>(*f) : std::nullopt;
}

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

TEST(Contradictions, AllocationAdviceFollowsWhatTheAllocatorDid) {
  // No marks (a profiler trace): every cause named, none claimed.
  const auto plain = allocation_finding("");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(has(plain->recommendation, "PYTORCH_NO_CUDA_MEMORY_CACHING")) << plain->recommendation;
  EXPECT_TRUE(has(plain->recommendation, "expandable_segments:True")) << plain->recommendation;
  EXPECT_TRUE(plain->est_speedup_of_fix.empty());

  // The cache turned off: turning it back on is the fix; expandable segments change nothing.
  const auto off = allocation_finding("alloc_retries=0,alloc_uncached=1,alloc_expandable=0");
  ASSERT_TRUE(off && off->est_speedup);
  EXPECT_TRUE(has(off->evidence, "PYTORCH_NO_CUDA_MEMORY_CACHING is set")) << off->evidence;
  EXPECT_FALSE(has(off->recommendation, "expandable_segments")) << off->recommendation;
  EXPECT_DOUBLE_EQ(estimate_of_fix(*off, "caching-allocator"), *off->est_speedup);
  EXPECT_DOUBLE_EQ(estimate_of_fix(*off, "expandable-segments"), 1.0);

  // Ten retries since a --steps window opened (two before it): fragmentation's fix.
  const auto retried =
      allocation_finding("alloc_retries=12,alloc_uncached=0,alloc_expandable=0", "alloc_retries_at_open=2");
  ASSERT_TRUE(retried);
  EXPECT_TRUE(has(retried->evidence, "ran out of memory 10 times while traced")) << retried->evidence;
  EXPECT_TRUE(has(retried->recommendation, "expandable_segments:True")) << retried->recommendation;
  EXPECT_TRUE(retried->est_speedup_of_fix.empty());

  // Retries with expandable segments on already: lower the peak instead.
  const auto on = allocation_finding("alloc_retries=3,alloc_uncached=0,alloc_expandable=1");
  ASSERT_TRUE(on);
  EXPECT_TRUE(has(on->recommendation, "Expandable segments are on already")) << on->recommendation;
  EXPECT_DOUBLE_EQ(estimate_of_fix(*on, "expandable-segments"), 1.0);

  // No retry while traced: the calls are the program's own (empty_cache, per-step buffers).
  const auto own = allocation_finding("alloc_retries=4,alloc_uncached=0,alloc_expandable=0", "alloc_retries_at_open=4");
  ASSERT_TRUE(own);
  EXPECT_TRUE(has(own->evidence, "never ran out of memory")) << own->evidence;
  EXPECT_TRUE(has(own->recommendation, "empty_cache")) << own->recommendation;
  EXPECT_FALSE(has(own->recommendation, "expandable_segments")) << own->recommendation;
  EXPECT_DOUBLE_EQ(estimate_of_fix(*own, "expandable-segments"), 1.0);
}

}  // namespace
}  // namespace gpuscope
