// The real loader (dlopen + the entry-point table) against the fake NVML library.
#include "nvml/nvml_api.h"

#include <gtest/gtest.h>

#include "nvml/fake_nvml_testing.h"

namespace gpuscope::nvml {
namespace {

using testing::testdata;
using testing::use_fixture;
using testing::use_fixture_text;

std::string symbol_of(const NvmlApi& api, std::string_view member) {
  for (const EntryPoint& e : api.entry_points()) {
    if (member == e.member) return e.symbol;
  }
  return "<no such row>";
}

TEST(NvmlApi, ResolvesNewestSymbolVersionsFirst) {
  use_fixture(testdata("synthetic_2gpu.txt"));
  auto api = NvmlApi::load(GPUSCOPE_FAKE_NVML_PATH);
  ASSERT_TRUE(api.ok()) << api.status().message();
  EXPECT_EQ(symbol_of(**api, "init"), "nvmlInit_v2");
  EXPECT_EQ(symbol_of(**api, "device_get_count"), "nvmlDeviceGetCount_v2");
  EXPECT_EQ(symbol_of(**api, "device_get_compute_running_processes"), "nvmlDeviceGetComputeRunningProcesses_v3");
  EXPECT_EQ(symbol_of(**api, "device_get_clocks_event_reasons"), "nvmlDeviceGetCurrentClocksEventReasons");
  EXPECT_EQ(symbol_of(**api, "gpm_metrics_get"), "nvmlGpmMetricsGet");
  // Every row resolved against the full fake.
  for (const EntryPoint& e : (*api)->entry_points()) EXPECT_FALSE(e.symbol.empty()) << e.member;
}

TEST(NvmlApi, FallsBackToOlderSymbolsAndLeavesMissingOnesNull) {
  use_fixture(testdata("synthetic_2gpu.txt"));
  auto api = NvmlApi::load(GPUSCOPE_FAKE_NVML_LEGACY_PATH);
  ASSERT_TRUE(api.ok()) << api.status().message();
  const NvmlApi& nv = **api;
  EXPECT_EQ(symbol_of(nv, "init"), "nvmlInit");
  EXPECT_EQ(symbol_of(nv, "device_get_handle_by_index"), "nvmlDeviceGetHandleByIndex");
  EXPECT_EQ(symbol_of(nv, "device_get_clocks_event_reasons"), "nvmlDeviceGetCurrentClocksThrottleReasons");
  EXPECT_EQ(nv.device_get_compute_running_processes, nullptr);
  EXPECT_NE(nv.device_get_compute_running_processes_v1, nullptr);
  EXPECT_EQ(nv.device_get_memory_info_v2, nullptr);
  EXPECT_EQ(nv.gpm_metrics_get, nullptr);
  EXPECT_EQ(symbol_of(nv, "gpm_sample_get"), "");
  // A missing entry point is "function not found", never a crash.
  nvmlGpmMetricsGet_t req{};
  EXPECT_EQ(NvmlApi::call(nv.gpm_metrics_get, &req), NVML_ERROR_FUNCTION_NOT_FOUND);
}

TEST(NvmlApi, MissingLibraryNamesPathAndOverride) {
  auto api = NvmlApi::load("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(api.ok());
  EXPECT_NE(api.status().message().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
  EXPECT_NE(api.status().message().find("GPUSCOPE_NVML_LIBRARY"), std::string::npos);
}

TEST(NvmlApi, EnvironmentOverrideIsUsed) {
  use_fixture(testdata("synthetic_2gpu.txt"));
  setenv("GPUSCOPE_NVML_LIBRARY", GPUSCOPE_FAKE_NVML_PATH, 1);
  auto api = NvmlApi::load();
  unsetenv("GPUSCOPE_NVML_LIBRARY");
  ASSERT_TRUE(api.ok()) << api.status().message();
  EXPECT_EQ((*api)->library_path(), GPUSCOPE_FAKE_NVML_PATH);
}

TEST(NvmlApi, LibraryWithoutNvmlInitIsRejected) {
  auto api = NvmlApi::load("libm.so.6");
  ASSERT_FALSE(api.ok());
  EXPECT_NE(api.status().message().find("is not NVML"), std::string::npos) << api.status().message();
}

TEST(NvmlApi, InitFailureKeepsFunctionAndCode) {
  use_fixture_text("init_error 9\n");
  auto api = NvmlApi::load(GPUSCOPE_FAKE_NVML_PATH);
  ASSERT_FALSE(api.ok());
  const std::string& m = api.status().message();
  EXPECT_NE(m.find("nvmlInit failed: Driver Not Loaded (NVML code 9)"), std::string::npos) << m;
}

TEST(NvmlApi, CheckConvertsCodesInOnePlace) {
  use_fixture(testdata("synthetic_2gpu.txt"));
  auto api = NvmlApi::load(GPUSCOPE_FAKE_NVML_PATH);
  ASSERT_TRUE(api.ok());
  EXPECT_TRUE((*api)->check(NVML_SUCCESS, "nvmlFoo").ok());
  EXPECT_EQ((*api)->check(NVML_ERROR_NO_PERMISSION, "nvmlDeviceGetPowerUsage").message(),
            "nvmlDeviceGetPowerUsage failed: Insufficient Permissions (NVML code 4)");
}

}  // namespace
}  // namespace gpuscope::nvml
