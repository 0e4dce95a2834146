// Replays NVML readings recorded on the H200 (testdata/nvml/h200_*.txt) through the fake NVML,
// the real loader and the sampler, and checks the waste signals the live front ends would
// raise: the planted case fires, nothing else does.
#include <chrono>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "core/signals.h"
#include "nvml/fake_nvml_testing.h"
#include "nvml/sampler.h"

namespace gpuscope::nvml {
namespace {

struct Replay {
  std::vector<DeviceSample> samples;
  std::set<std::string> signals;
};

Replay replay(const std::string& fixture, int frames) {
  Replay r;
  testing::use_fixture(testing::testdata(fixture));
  auto api = NvmlApi::load(GPUSCOPE_FAKE_NVML_PATH);
  EXPECT_TRUE(api.ok());
  SamplerOptions so;
  so.proc_root = testing::testdata("proc");
  auto sampler = Sampler::open(std::move(*api), so);
  EXPECT_TRUE(sampler.ok());
  SignalThresholds t;
  t.idle_after_ns = 0;  // Replay runs at 110 ms per frame; durations are tested elsewhere.
  t.signal_after_ns = 0;
  SignalTracker tracker(t);
  LiveSnapshot snap;
  for (int i = 0; i < frames; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(110));
    EXPECT_TRUE((*sampler)->sample(&snap).ok());
    r.samples.push_back(snap.devices[0]);
    for (const Signal& s : tracker.update(snap.devices, snap.processes)) {
      r.signals.insert(std::string(signal_name(s.kind)));
    }
  }
  return r;
}

TEST(RecordedH200, ElementwiseLoopIsBandwidthBoundOnly) {
  Replay r = replay("h200_elementwise.txt", 24);
  ASSERT_EQ(r.samples.size(), 24u);
  // First frame as recorded (gpuscope monitor JSONL, 6 significant digits in the fixture).
  EXPECT_EQ(r.samples[0].gpu_util_pct, 100.0);
  EXPECT_NEAR(*r.samples[0].sm_active_pct, 98.7036, 1e-4);
  EXPECT_NEAR(*r.samples[0].dram_bw_pct, 87.238, 1e-3);
  EXPECT_EQ(r.samples[0].tensor_active_pct, 0.0);
  EXPECT_NEAR(*r.samples[0].power_w, 467.97, 1e-9);
  EXPECT_EQ(r.signals, (std::set<std::string>{"memory_bandwidth_bound"}));
}

// The other loads of the same scripted check (validation/run live, 2026-11-30, H200): each
// planted case raises exactly its signal; the bf16 GEMM loop and an idle GPU raise none.
struct Planted {
  const char* fixture;
  std::set<std::string> signals;
};

class RecordedLoads : public ::testing::TestWithParam<Planted> {};

TEST_P(RecordedLoads, RaiseOnlyThePlantedSignal) {
  const Planted& p = GetParam();
  Replay r = replay(p.fixture, 10);
  ASSERT_EQ(r.samples.size(), 10u);
  EXPECT_EQ(r.signals, p.signals) << p.fixture;
}

INSTANTIATE_TEST_SUITE_P(H200, RecordedLoads,
                         ::testing::Values(Planted{"h200_gemm_bf16.txt", {}}, Planted{"h200_idle.txt", {}},
                                           Planted{"h200_gemm_fp32.txt", {"tensor_cores_unused"}},
                                           Planted{"h200_tiny_kernel.txt", {"busy_not_working"}},
                                           // The zoo's C++ loop of 4096 one-block kernels: utilization ~60%, below
                                           // the busy-not-working threshold of 80%, SM active ~0.
                                           Planted{"h200_tiny_kernel_cpp.txt", {}},
                                           Planted{"h200_host_bound_hold.txt", {"idle_holding_memory"}}));

TEST(RecordedH200, TinyKernelLoopFromCppShowsUtilizationWithoutSmActivity) {
  Replay r = replay("h200_tiny_kernel_cpp.txt", 10);
  ASSERT_EQ(r.samples.size(), 10u);
  for (const auto& s : r.samples) {
    ASSERT_TRUE(s.gpu_util_pct && s.sm_active_pct);
    EXPECT_GE(*s.gpu_util_pct, 30.0);
    EXPECT_LT(*s.sm_active_pct, 1.0);
  }
}

TEST(RecordedH200, BusyButNotWorkingReadsAsUtilizationWithoutSmActivity) {
  Replay r = replay("h200_tiny_kernel.txt", 5);
  ASSERT_FALSE(r.samples.empty());
  EXPECT_GE(*r.samples.back().gpu_util_pct, 90.0);
  EXPECT_LT(*r.samples.back().sm_active_pct, 5.0);
}

}  // namespace
}  // namespace gpuscope::nvml

namespace gpuscope::nvml {
namespace {

// The energy counter costs milliseconds of CPU per read on the real driver, so it is read once
// and held for 30 s: the recorded frames' changing energy must not show up frame by frame.
TEST(RecordedH200, EnergyCounterIsReadAtMostEvery30Seconds) {
  Replay r = replay("h200_gemm_bf16.txt", 4);
  ASSERT_EQ(r.samples.size(), 4u);
  ASSERT_TRUE(r.samples[0].energy_j.has_value());
  for (const auto& s : r.samples) EXPECT_EQ(s.energy_j, r.samples[0].energy_j);
  ASSERT_TRUE(r.samples[3].power_w.has_value());  // Power is still read every sample.
}

}  // namespace
}  // namespace gpuscope::nvml
