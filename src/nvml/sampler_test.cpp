// The sampler end to end over the fake NVML: values, units, absent metrics, GPM rules,
// cumulative counters, process identity, error paths.
#include "nvml/sampler.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "nvml/fake_nvml_testing.h"

namespace gpuscope::nvml {
namespace {

using testing::testdata;
using testing::use_fixture;
using testing::use_fixture_text;

std::unique_ptr<Sampler> open_fake(const char* library = GPUSCOPE_FAKE_NVML_PATH) {
  auto api = NvmlApi::load(library);
  EXPECT_TRUE(api.ok()) << api.status().message();
  if (!api.ok()) return nullptr;
  SamplerOptions options;
  options.proc_root = testdata("proc");
  auto sampler = Sampler::open(std::move(*api), options);
  EXPECT_TRUE(sampler.ok()) << sampler.status().message();
  return sampler.ok() ? std::move(*sampler) : nullptr;
}

void wait_gpm() { std::this_thread::sleep_for(std::chrono::milliseconds(110)); }

TEST(Sampler, ReadsEveryMetricInOurUnits) {
  use_fixture(testdata("synthetic_2gpu.txt"));
  auto sampler = open_fake();
  ASSERT_TRUE(sampler);
  ASSERT_EQ(sampler->devices().size(), 2u);
  EXPECT_EQ(sampler->devices()[0].name, "NVIDIA H200");
  EXPECT_EQ(sampler->devices()[1].uuid, "GPU-55555555-6666-7777-8888-999999999999");
  EXPECT_TRUE(sampler->devices()[0].gpm_supported);
  EXPECT_EQ(sampler->driver_version(), "580.159.04");

  wait_gpm();
  LiveSnapshot snap;
  ASSERT_TRUE(sampler->sample(&snap).ok());
  ASSERT_EQ(snap.devices.size(), 2u);
  const DeviceSample& s = snap.devices[0];
  EXPECT_EQ(s.gpu_util_pct, 100.0);
  EXPECT_EQ(s.mem_util_pct, 20.0);
  EXPECT_EQ(s.memory_used_bytes, 17179869184u);
  EXPECT_EQ(s.memory_total_bytes, 150754820096u);
  EXPECT_EQ(s.power_w, 650.0);
  EXPECT_EQ(s.energy_j, 1000.0);
  EXPECT_EQ(s.sm_clock_mhz, 1980.0);
  EXPECT_EQ(s.mem_clock_mhz, 3201.0);
  EXPECT_EQ(s.temperature_c, 55.0);
  EXPECT_EQ(s.throttle_reasons, 0u);
  EXPECT_EQ(s.sm_active_pct, 96.5);
  EXPECT_EQ(s.sm_occupancy_pct, 14.25);
  EXPECT_EQ(s.tensor_active_pct, 93.75);
  EXPECT_EQ(s.tensor_hmma_pct, 93.75);
  EXPECT_EQ(s.dram_bw_pct, 17.0);
  EXPECT_EQ(s.fp32_pct, 1.5);
  EXPECT_EQ(s.pcie_tx_bytes_per_s, 8.0 * 1024 * 1024);  // GPM MiB/s -> bytes/s
  EXPECT_EQ(s.pcie_rx_bytes_per_s, 16.0 * 1024 * 1024);
  EXPECT_GE(s.interval_ns, 100'000'000);
  EXPECT_GT(s.time_ns, 0);
  EXPECT_EQ(snap.devices[1].throttle_reasons, 1u);
}

TEST(Sampler, ProcessesCarryIdentityFromProc) {
  use_fixture(testdata("synthetic_2gpu.txt"));
  auto sampler = open_fake();
  ASSERT_TRUE(sampler);
  wait_gpm();
  LiveSnapshot snap;
  ASSERT_TRUE(sampler->sample(&snap).ok());
  ASSERT_EQ(snap.processes.size(), 2u);
  const ProcessSample& p = snap.processes[0];
  EXPECT_EQ(p.device, 0);
  EXPECT_EQ(p.pid, 4242u);
  EXPECT_EQ(p.memory_used_bytes, 17179869184u);
  EXPECT_EQ(p.sm_util_pct, 100.0);
  EXPECT_EQ(p.mem_util_pct, 20.0);
  EXPECT_EQ(p.command, "python3 train.py --batch 16");
  EXPECT_EQ(p.user, "root");
  EXPECT_EQ(p.pod_uid, "8f9a5b2c-1d2e-4f3a-9b8c-7d6e5f4a3b2c");
  const ProcessSample& q = snap.processes[1];
  EXPECT_EQ(q.device, 1);
  EXPECT_EQ(q.command, "notebook");  // Empty cmdline falls back to comm.
  EXPECT_EQ(q.user, "4123456");      // No passwd entry: numeric uid.
  EXPECT_EQ(q.slurm_job_id, "987654");
  EXPECT_FALSE(q.sm_util_pct.has_value());  // No utilization samples for it.
}

TEST(Sampler, GpmNeedsOneHundredMillisecondsBetweenSamples) {
  use_fixture(testdata("synthetic_2gpu.txt"));
  auto sampler = open_fake();
  ASSERT_TRUE(sampler);
  LiveSnapshot snap;
  ASSERT_TRUE(sampler->sample(&snap).ok());  // Right after open's GPM sample: too soon.
  EXPECT_FALSE(snap.devices[0].sm_active_pct.has_value());
  EXPECT_TRUE(snap.devices[0].gpu_util_pct.has_value());
  wait_gpm();
  ASSERT_TRUE(sampler->sample(&snap).ok());
  EXPECT_EQ(snap.devices[0].sm_active_pct, 96.5);
  // The ratio covers the real time since open's GPM sample.
  EXPECT_GE(snap.devices[0].interval_ns, 110'000'000);
}

TEST(Sampler, SlightlyEarlyPassWaitsForGpm) {
  use_fixture(testdata("synthetic_2gpu.txt"));
  auto sampler = open_fake();
  ASSERT_TRUE(sampler);
  std::this_thread::sleep_for(std::chrono::milliseconds(92));  // A 100 ms schedule, early.
  LiveSnapshot snap;
  ASSERT_TRUE(sampler->sample(&snap).ok());
  EXPECT_EQ(snap.devices[0].sm_active_pct, 96.5);
  EXPECT_GE(snap.devices[0].interval_ns, 100'000'000);
}

TEST(Sampler, ActiveSecondsAreRatioTimesRealInterval) {
  use_fixture(testdata("synthetic_2gpu.txt"));
  auto sampler = open_fake();
  ASSERT_TRUE(sampler);
  LiveSnapshot snap;
  double expected_sm = 0, expected_busy = 0;
  for (int i = 0; i < 3; ++i) {
    wait_gpm();
    ASSERT_TRUE(sampler->sample(&snap).ok());
    expected_sm += 0.965 * snap.devices[0].interval_ns / 1e9;
    expected_busy += 1.0 * snap.devices[0].interval_ns / 1e9;
  }
  ASSERT_TRUE(snap.counters[0].sm_active_s.has_value());
  EXPECT_NEAR(*snap.counters[0].sm_active_s, expected_sm, 1e-9);
  EXPECT_NEAR(*snap.counters[0].gpu_busy_s, expected_busy, 1e-9);
  EXPECT_GT(*snap.counters[0].sm_active_s, 0.3);
  EXPECT_EQ(snap.counters[1].sm_active_s, 0.0);  // Measured, and idle: zero, not absent.
}

TEST(Sampler, LegacyDriverWithoutGpmLeavesMetricsAbsent) {
  use_fixture(testdata("synthetic_2gpu.txt"));
  auto sampler = open_fake(GPUSCOPE_FAKE_NVML_LEGACY_PATH);
  ASSERT_TRUE(sampler);
  EXPECT_FALSE(sampler->devices()[0].gpm_supported);
  wait_gpm();
  LiveSnapshot snap;
  ASSERT_TRUE(sampler->sample(&snap).ok());
  const DeviceSample& s = snap.devices[0];
  EXPECT_EQ(s.gpu_util_pct, 100.0);
  EXPECT_EQ(s.memory_used_bytes, 17179869184u);  // Through nvmlDeviceGetMemoryInfo (v1).
  EXPECT_FALSE(s.energy_j.has_value());          // Entry point missing.
  EXPECT_FALSE(s.sm_active_pct.has_value());
  EXPECT_FALSE(s.tensor_active_pct.has_value());
  EXPECT_FALSE(s.pcie_tx_bytes_per_s.has_value());  // No pcie_*_kbs in the fixture.
  EXPECT_FALSE(snap.counters[0].sm_active_s.has_value());
  ASSERT_EQ(snap.processes.size(), 2u);  // Through the v1 process layout.
  EXPECT_EQ(snap.processes[0].pid, 4242u);
  EXPECT_EQ(snap.processes[0].memory_used_bytes, 17179869184u);
  EXPECT_TRUE(sampler->take_warnings().empty());
}

TEST(Sampler, PcieFromNvmlCounterWithoutGpm) {
  use_fixture_text(
      "device 0 uuid=GPU-a gpm=0 mig=0 name=Fake GPU\n"
      "frame\ns 0 gpu_util=5 mem_util=0 pcie_tx_kbs=1000 pcie_rx_kbs=2000\n");
  auto sampler = open_fake(GPUSCOPE_FAKE_NVML_LEGACY_PATH);
  ASSERT_TRUE(sampler);
  LiveSnapshot snap;
  ASSERT_TRUE(sampler->sample(&snap).ok());
  EXPECT_EQ(snap.devices[0].pcie_tx_bytes_per_s, 1000.0 * 1024);  // NVML KB/s -> bytes/s
  EXPECT_EQ(snap.devices[0].pcie_rx_bytes_per_s, 2000.0 * 1024);
}

TEST(Sampler, ErrorsMakeMetricsAbsentAndWarnOnce) {
  use_fixture_text(
      "driver 1.0\n"
      "error nvmlDeviceGetPowerUsage 4\n"
      "error nvmlDeviceGetTemperature 3\n"
      "device 0 uuid=GPU-a gpm=1 mig=0 name=Fake GPU\n"
      "frame\n"
      "s 0 gpu_util=50 mem_util=1 power_mw=100000 temp=40 gpm2=10\n");
  auto sampler = open_fake();
  ASSERT_TRUE(sampler);
  LiveSnapshot snap;
  for (int i = 0; i < 2; ++i) {
    wait_gpm();
    ASSERT_TRUE(sampler->sample(&snap).ok());
  }
  const DeviceSample& s = snap.devices[0];
  EXPECT_FALSE(s.power_w.has_value());
  EXPECT_FALSE(s.temperature_c.has_value());
  EXPECT_FALSE(s.memory_used_bytes.has_value());  // Not in the fixture: NOT_SUPPORTED.
  EXPECT_EQ(s.sm_active_pct, 10.0);
  EXPECT_FALSE(s.tensor_active_pct.has_value());  // This metric's own return code failed.
  auto warnings = sampler->take_warnings();
  ASSERT_EQ(warnings.size(), 1u);  // Permission denied, once; NOT_SUPPORTED is silent.
  EXPECT_EQ(warnings[0], "nvmlDeviceGetPowerUsage failed: Insufficient Permissions (NVML code 4) on GPU 0");
  EXPECT_TRUE(sampler->take_warnings().empty());
}

TEST(Sampler, FramesAdvanceOncePerPass) {
  use_fixture_text(
      "device 0 uuid=GPU-a gpm=1 mig=0 name=Fake GPU\n"
      "frame\ns 0 gpu_util=10 mem_util=0 gpm2=1\n"
      "frame\ns 0 gpu_util=20 mem_util=0 gpm2=2\n");
  auto sampler = open_fake();
  ASSERT_TRUE(sampler);
  LiveSnapshot snap;
  std::vector<double> util, sm;
  for (int i = 0; i < 3; ++i) {
    wait_gpm();
    ASSERT_TRUE(sampler->sample(&snap).ok());
    util.push_back(*snap.devices[0].gpu_util_pct);
    sm.push_back(snap.devices[0].sm_active_pct.value_or(-1));
  }
  EXPECT_EQ(util, (std::vector<double>{10, 20, 10}));
  EXPECT_EQ(sm, (std::vector<double>{1, 2, 1}));
}

TEST(Sampler, MigInstancesReadThroughGpmMigSampleGet) {
  use_fixture_text(
      "device 0 uuid=GPU-a gpm=1 mig=2 name=Fake GPU\n"
      "frame\ns 0 gpu_util=30 mem_util=0 gpm2=40 gpm5=20\n");
  auto sampler = open_fake();
  ASSERT_TRUE(sampler);
  ASSERT_EQ(sampler->devices().size(), 3u);
  EXPECT_EQ(sampler->devices()[1].gpu_instance_id, 1);
  EXPECT_EQ(sampler->devices()[2].gpu_instance_id, 2);
  EXPECT_EQ(sampler->devices()[2].uuid, "MIG-GPU-a-2");
  wait_gpm();
  LiveSnapshot snap;
  ASSERT_TRUE(sampler->sample(&snap).ok());
  ASSERT_EQ(snap.devices.size(), 3u);
  EXPECT_EQ(snap.devices[1].gpu_instance_id, 1);
  EXPECT_EQ(snap.devices[1].sm_active_pct, 40.0);
  EXPECT_FALSE(snap.devices[1].gpu_util_pct.has_value());  // Classic metrics are per GPU.
}

TEST(Sampler, NoDevicesIsAnError) {
  use_fixture_text("driver 1.0\n");
  auto api = NvmlApi::load(GPUSCOPE_FAKE_NVML_PATH);
  ASSERT_TRUE(api.ok());
  auto sampler = Sampler::open(std::move(*api), SamplerOptions{});
  ASSERT_FALSE(sampler.ok());
  EXPECT_NE(sampler.status().message().find("no NVIDIA GPU found"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::nvml
