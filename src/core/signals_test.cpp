// Waste signals on synthetic samples: each fires on its planted case, after its duration,
// and not on a well-used GPU or when a needed metric is absent.
#include "core/signals.h"

#include <gtest/gtest.h>

namespace gpuscope {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

// Readings measured on the H200 (shared/GPU.md), as samples.
DeviceSample gemm_bf16(int64_t t) {
  DeviceSample s;
  s.time_ns = t;
  s.gpu_util_pct = 100;
  s.sm_active_pct = 96.6;
  s.sm_occupancy_pct = 14.3;
  s.tensor_active_pct = 93.7;
  s.dram_bw_pct = 17.1;
  return s;
}
DeviceSample tiny_kernels(int64_t t) {  // One small kernel always running.
  DeviceSample s;
  s.time_ns = t;
  s.gpu_util_pct = 100;
  s.sm_active_pct = 0.8;
  s.tensor_active_pct = 0;
  s.dram_bw_pct = 0;
  return s;
}
DeviceSample idle(int64_t t) {
  DeviceSample s;
  s.time_ns = t;
  s.gpu_util_pct = 0;
  s.sm_active_pct = 0;
  s.tensor_active_pct = 0;
  s.dram_bw_pct = 0;
  return s;
}
DeviceSample fp32_gemm(int64_t t) {
  DeviceSample s = gemm_bf16(t);
  s.sm_active_pct = 96.9;
  s.tensor_active_pct = 0;
  s.dram_bw_pct = 4.7;
  return s;
}
DeviceSample elementwise(int64_t t) {
  DeviceSample s = gemm_bf16(t);
  s.sm_active_pct = 99.2;
  s.tensor_active_pct = 0;
  s.dram_bw_pct = 87.2;
  return s;
}

ProcessSample holder(uint64_t bytes, uint32_t pid = 77) {
  ProcessSample p;
  p.pid = pid;
  p.memory_used_bytes = bytes;
  p.command = "python3 notebook.py";
  p.user = "alice";
  p.pod_uid = "8f9a5b2c-1d2e-4f3a-9b8c-7d6e5f4a3b2c";
  return p;
}

// Feeds `make(t)` once per second for `seconds` and returns the last update's signals.
template <typename Make>
std::vector<Signal> run(SignalTracker& tracker, Make make, int seconds, std::vector<ProcessSample> procs = {}) {
  std::vector<Signal> out;
  for (int i = 0; i <= seconds; ++i) {
    DeviceSample s = make(i * kSecond);
    for (auto& p : procs) p.time_ns = s.time_ns;
    out = tracker.update({&s, 1}, procs);
  }
  return out;
}

SignalThresholds fast() {
  SignalThresholds t;
  t.idle_after_ns = 5 * kSecond;
  t.signal_after_ns = 3 * kSecond;
  return t;
}

TEST(Signals, GemmLoopRaisesNothing) {
  SignalTracker tracker(fast());
  EXPECT_TRUE(run(tracker, gemm_bf16, 30, {holder(16 * kGiB)}).empty());
}

TEST(Signals, IdleHoldingMemoryNamesTheProcessAfterItsDuration) {
  SignalTracker tracker(fast());
  EXPECT_TRUE(run(tracker, idle, 4, {holder(4 * kGiB)}).empty());  // 4 s < 5 s
  SignalTracker tracker2(fast());
  auto sigs = run(tracker2, idle, 5, {holder(4 * kGiB)});
  ASSERT_EQ(sigs.size(), 1u);
  EXPECT_EQ(sigs[0].kind, SignalKind::kIdleHoldingMemory);
  EXPECT_EQ(signal_name(sigs[0].kind), "idle_holding_memory");
  EXPECT_EQ(sigs[0].since_ns, 0);
  ASSERT_TRUE(sigs[0].process.has_value());
  EXPECT_EQ(sigs[0].process->pid, 77u);
  EXPECT_EQ(sigs[0].process->user, "alice");
  EXPECT_EQ(sigs[0].evidence, "holds 4.0 GiB, SM active 0.0%");
}

TEST(Signals, IdleBelowMemoryThresholdIsNotWaste) {
  SignalTracker tracker(fast());
  EXPECT_TRUE(run(tracker, idle, 30, {holder(512ull * 1024 * 1024)}).empty());
}

TEST(Signals, IdleTimerRestartsWhenTheGpuWorks) {
  SignalTracker tracker(fast());
  std::vector<ProcessSample> procs = {holder(4 * kGiB)};
  auto alternating = [](int64_t t) {
    return (t / kSecond) % 4 == 3 ? gemm_bf16(t) : idle(t);  // Busy every 4th second.
  };
  EXPECT_TRUE(run(tracker, alternating, 30, procs).empty());
}

TEST(Signals, WithoutGpmIdleUsesUtilization) {
  SignalTracker tracker(fast());
  auto no_gpm = [](int64_t t) {
    DeviceSample s;
    s.time_ns = t;
    s.gpu_util_pct = 0;
    return s;
  };
  auto sigs = run(tracker, no_gpm, 6, {holder(2 * kGiB)});
  ASSERT_EQ(sigs.size(), 1u);
  EXPECT_EQ(sigs[0].evidence, "holds 2.0 GiB, utilization 0.0%");
}

TEST(Signals, BusyNotWorkingOnTinyKernels) {
  SignalTracker tracker(fast());
  auto sigs = run(tracker, tiny_kernels, 3, {holder(2 * kGiB)});
  ASSERT_EQ(sigs.size(), 1u);
  EXPECT_EQ(sigs[0].kind, SignalKind::kBusyNotWorking);
  EXPECT_EQ(sigs[0].evidence.substr(0, 37), "utilization 100.0% but SM active 0.8%");
  // It names the likely causes; a trace tells them apart (docs/live.md).
  EXPECT_EQ(sigs[0].evidence.substr(37), " (small kernels: under-batched or launch-bound)");
  ASSERT_TRUE(sigs[0].process.has_value());
  EXPECT_EQ(sigs[0].process->pid, 77u);
}

TEST(Signals, BusyNotWorkingNeedsSmActive) {
  SignalTracker tracker(fast());
  auto util_only = [](int64_t t) {
    DeviceSample s;
    s.time_ns = t;
    s.gpu_util_pct = 100;  // No GPM: unmeasured SM activity is not "low".
    return s;
  };
  EXPECT_TRUE(run(tracker, util_only, 30).empty());
}

TEST(Signals, TensorCoresUnusedOnFp32Gemm) {
  SignalTracker tracker(fast());
  auto sigs = run(tracker, fp32_gemm, 3);
  ASSERT_EQ(sigs.size(), 1u);
  EXPECT_EQ(sigs[0].kind, SignalKind::kTensorCoresUnused);
  EXPECT_FALSE(sigs[0].process.has_value());
}

TEST(Signals, ElementwiseIsBandwidthBoundNotTensorWaste) {
  SignalTracker tracker(fast());
  auto sigs = run(tracker, elementwise, 3);
  ASSERT_EQ(sigs.size(), 1u);
  EXPECT_EQ(sigs[0].kind, SignalKind::kMemoryBandwidthBound);
  EXPECT_EQ(sigs[0].evidence, "DRAM bandwidth 87.2%, SM active 99.2%");
}

TEST(Signals, ThresholdsAreConfigurable) {
  SignalThresholds t = fast();
  t.busy_sm_active_pct = 0.5;  // Now 0.8% SM active counts as working.
  SignalTracker tracker(t);
  EXPECT_TRUE(run(tracker, tiny_kernels, 10).empty());
}

TEST(Signals, EachGpuIsTrackedSeparately) {
  SignalTracker tracker(fast());
  std::vector<Signal> sigs;
  for (int i = 0; i <= 3; ++i) {
    DeviceSample a = gemm_bf16(i * kSecond);
    DeviceSample b = tiny_kernels(i * kSecond);
    b.device = 1;
    DeviceSample both[] = {a, b};
    sigs = tracker.update(both, {});
  }
  ASSERT_EQ(sigs.size(), 1u);
  EXPECT_EQ(sigs[0].device, 1);
}

}  // namespace
}  // namespace gpuscope
