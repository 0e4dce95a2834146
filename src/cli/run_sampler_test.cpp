// `gpuscope run`'s sampling thread over the fake NVML: samples at its interval, stops promptly.
#include "cli/run_sampler.h"

#include <stdlib.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "nvml/fake_nvml_testing.h"

namespace gpuscope::cli {
namespace {

using Clock = std::chrono::steady_clock;

int64_t ms_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

void use_fake_nvml(const char* fixture) {
  setenv("GPUSCOPE_NVML_LIBRARY", GPUSCOPE_FAKE_NVML_PATH, 1);
  nvml::testing::use_fixture(nvml::testing::testdata(fixture));
}

TEST(RunSampler, SamplesAtItsIntervalAndStopsPromptly) {
  use_fake_nvml("synthetic_2gpu.txt");
  RunSampler sampling;
  sampling.start(100);
  ASSERT_EQ(sampling.note(), "");
  const auto t0 = Clock::now();
  sampling.run_thread();
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  const auto stop_at = Clock::now();
  sampling.stop();
  EXPECT_LT(ms_since(stop_at), 50);  // Woken from its wait, not at the next tick.
  sampling.stop();                   // Twice is fine.
  EXPECT_GE(ms_since(t0), 450);
  // Passes at 0, 100, 200, 300, 400 ms (one more on a slow machine is tolerated), two GPUs each.
  const std::vector<DeviceSample>& s = sampling.samples();
  ASSERT_GE(s.size(), 8u);
  ASSERT_LE(s.size(), 12u);
  ASSERT_EQ(s.size() % 2, 0u);
  for (size_t i = 0; i < s.size(); ++i) EXPECT_EQ(s[i].device, static_cast<int32_t>(i % 2)) << i;
  for (size_t i = 2; i < s.size(); i += 2) {
    const int64_t gap_ms = (s[i].time_ns - s[i - 2].time_ns) / 1'000'000;
    EXPECT_GE(gap_ms, 60) << i;
    EXPECT_LE(gap_ms, 200) << i;
  }
}

TEST(RunSampler, StopsAtOnceWithALongInterval) {
  use_fake_nvml("synthetic_2gpu.txt");
  RunSampler sampling;
  sampling.start(3'600'000);
  sampling.run_thread();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto stop_at = Clock::now();
  sampling.stop();
  EXPECT_LT(ms_since(stop_at), 50);
  EXPECT_EQ(sampling.samples().size(), 2u);  // The first pass only.
}

TEST(RunSampler, OffWithoutAnInterval) {
  RunSampler sampling;
  sampling.start(0);
  sampling.run_thread();
  sampling.stop();
  EXPECT_TRUE(sampling.samples().empty());
  EXPECT_EQ(sampling.note(), "");
}

}  // namespace
}  // namespace gpuscope::cli
