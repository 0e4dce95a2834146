// The health families over the fake NVML (testdata/nvml/synthetic_health.txt): names, types,
// HELP, units, per-code XIDs, absent on the GPU without readings, the dcgm-exporter names and
// types, and promtool's linter.
#include "exporter/prometheus_health.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "nvml/fake_nvml_testing.h"

namespace gpuscope::exporter {
namespace {

std::string render(ExpositionOptions options = {}) {
  nvml::testing::use_fixture(nvml::testing::testdata("synthetic_health.txt"));
  auto api = nvml::NvmlApi::load(GPUSCOPE_FAKE_NVML_PATH);
  EXPECT_TRUE(api.ok()) << api.status().message();
  nvml::SamplerOptions so;
  so.processes = false;
  auto sampler = nvml::Sampler::open(std::move(*api), so);
  EXPECT_TRUE(sampler.ok()) << sampler.status().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(110));
  nvml::LiveSnapshot snap;
  EXPECT_TRUE((*sampler)->sample(&snap).ok());
  ExpositionInput in{&(*sampler)->devices(), &snap, nullptr, (*sampler)->driver_version()};
  return render_prometheus(in, options);
}

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

const std::string kGpu0 = R"(gpu="0",uuid="GPU-4ea17400-0000-4000-8000-000000000000",model="NVIDIA H200")";
const std::string kGpu1 = R"(gpu="1",uuid="GPU-4ea17400-0000-4000-8000-000000000001")";

TEST(PrometheusHealth, XidErrorsByCodeWithThePagedCodesFromZero) {
  const std::string t = render();
  EXPECT_TRUE(has_line(t, "# TYPE gpuscope_xid_errors_total counter")) << t;
  EXPECT_TRUE(has_line(t, "gpuscope_xid_errors_total{" + kGpu0 + ",xid=\"79\"} 2"));
  EXPECT_TRUE(has_line(t, "gpuscope_xid_errors_total{" + kGpu0 + ",xid=\"94\"} 1"));
  EXPECT_TRUE(has_line(t, "gpuscope_xid_errors_total{" + kGpu0 + ",xid=\"48\"} 0"));
  EXPECT_TRUE(has_line(t, "gpuscope_xid_errors_total{" + kGpu0 + ",xid=\"95\"} 0"));
  EXPECT_EQ(count(t, "gpuscope_xid_errors_total{" + kGpu0), 7u);  // 48 63 64 74 79 94 95.
  EXPECT_TRUE(has_line(t, "gpuscope_xid_last_code{" + kGpu0 + "} 79"));
  EXPECT_EQ(count(t, "# HELP gpuscope_xid_errors_total "), 1u);
}

TEST(PrometheusHealth, EccRemappedRowsReplaysNvlinkPowerLimit) {
  const std::string t = render();
  EXPECT_TRUE(has_line(t, "gpuscope_ecc_volatile_errors_total{" + kGpu0 + ",type=\"corrected\"} 2")) << t;
  EXPECT_TRUE(has_line(t, "gpuscope_ecc_volatile_errors_total{" + kGpu0 + ",type=\"uncorrected\"} 1"));
  EXPECT_TRUE(has_line(t, "gpuscope_ecc_aggregate_errors_total{" + kGpu0 + ",type=\"corrected\"} 10"));
  EXPECT_TRUE(has_line(t, "# TYPE gpuscope_ecc_aggregate_errors_total counter"));
  EXPECT_TRUE(has_line(t, "gpuscope_remapped_rows_total{" + kGpu0 + ",type=\"correctable\"} 3"));
  EXPECT_TRUE(has_line(t, "gpuscope_remapped_rows_total{" + kGpu0 + ",type=\"uncorrectable\"} 1"));
  EXPECT_TRUE(has_line(t, "gpuscope_remapped_rows_pending{" + kGpu0 + "} 1"));
  EXPECT_TRUE(has_line(t, "gpuscope_remapped_rows_failure{" + kGpu0 + "} 0"));
  EXPECT_TRUE(has_line(t, "# TYPE gpuscope_remapped_rows_pending gauge"));
  EXPECT_TRUE(has_line(t, "gpuscope_pcie_replays_total{" + kGpu0 + "} 12"));
  EXPECT_TRUE(has_line(t, "gpuscope_nvlink_errors_total{" + kGpu0 + ",link=\"1\",type=\"recovery\"} 1"));
  EXPECT_TRUE(has_line(t, "gpuscope_nvlink_errors_total{" + kGpu0 + ",link=\"0\",type=\"crc_flit\"} 4"));
  EXPECT_EQ(count(t, "gpuscope_nvlink_errors_total{"), 8u);  // 2 links x 4 types.
  EXPECT_TRUE(has_line(t, "gpuscope_power_limit_watts{" + kGpu0 + "} 700"));
  EXPECT_TRUE(has_line(t, "# TYPE gpuscope_power_limit_watts gauge"));
}

TEST(PrometheusHealth, ClocksEventReasonsByName) {
  const std::string t = render();
  // 68 = 0x44: sw_power_cap and hw_thermal_slowdown.
  EXPECT_TRUE(has_line(t, "gpuscope_clocks_event_reason_active{" + kGpu0 + ",reason=\"hw_thermal_slowdown\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "gpuscope_clocks_event_reason_active{" + kGpu0 + ",reason=\"sw_power_cap\"} 1"));
  EXPECT_TRUE(has_line(t, "gpuscope_clocks_event_reason_active{" + kGpu0 + ",reason=\"hw_power_brake_slowdown\"} 0"));
  EXPECT_TRUE(has_line(t, "gpuscope_clocks_event_reason_active{" + kGpu0 + ",reason=\"gpu_idle\"} 0"));
  EXPECT_EQ(count(t, "gpuscope_clocks_event_reason_active{" + kGpu0), 9u);
}

TEST(PrometheusHealth, NothingForTheGpuWithoutReadings) {
  const std::string t = render();
  for (const char* family :
       {"gpuscope_xid_errors_total", "gpuscope_xid_last_code", "gpuscope_ecc_volatile_errors_total",
        "gpuscope_ecc_aggregate_errors_total", "gpuscope_remapped_rows_total", "gpuscope_remapped_rows_pending",
        "gpuscope_remapped_rows_failure", "gpuscope_pcie_replays_total", "gpuscope_nvlink_errors_total",
        "gpuscope_power_limit_watts"}) {
    EXPECT_EQ(t.find(std::string(family) + "{" + kGpu1), std::string::npos) << family;
  }
  // The GPU's throttle bitmask is read (1: idle), so its reasons are there.
  EXPECT_NE(t.find("gpuscope_clocks_event_reason_active{" + kGpu1), std::string::npos);
}

TEST(PrometheusHealth, DcgmCompatNamesAndTypes) {
  const std::string t = render({true, "node1"});
  const std::string l =
      R"(gpu="0",UUID="GPU-4ea17400-0000-4000-8000-000000000000",pci_bus_id="00000000:18:00.0",device="nvidia0",)"
      R"(modelName="NVIDIA H200",Hostname="node1",DCGM_FI_DRIVER_VERSION="580.159.04")";
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_XID_ERRORS{" + l + "} 79")) << t;
  EXPECT_TRUE(has_line(t, "# TYPE DCGM_FI_DEV_XID_ERRORS gauge"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{" + l + "} 2"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{" + l + "} 1"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL{" + l + "} 10"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL{" + l + "} 1"));
  EXPECT_TRUE(has_line(t, "# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER{" + l + "} 12"));
  EXPECT_TRUE(has_line(t, "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{" + l + "} 1"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{" + l + "} 3"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_ROW_REMAP_FAILURE{" + l + "} 0"));
  EXPECT_TRUE(has_line(t, "# TYPE DCGM_FI_DEV_ROW_REMAP_FAILURE gauge"));
  // Per-GPU totals over the links.
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{" + l + "} 3"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{" + l + "} 1"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{" + l + "} 4"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL{" + l + "} 1"));
  EXPECT_TRUE(has_line(t, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" + l + "} 1000000"));
  EXPECT_TRUE(has_line(t, "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge"));
  EXPECT_TRUE(has_line(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE{" + l + "} 1"));
  // GPU 1: no XID events, so no XID field (not DCGM's 0).
  EXPECT_EQ(t.find("DCGM_FI_DEV_XID_ERRORS{gpu=\"1\""), std::string::npos);
  EXPECT_TRUE(has_line(t, R"(DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",UUID="GPU-4ea17400-0000-4000-8000-000000000001",)"
                          R"(pci_bus_id="00000000:19:00.0",device="nvidia1",modelName="NVIDIA L4",Hostname="node1",)"
                          R"(DCGM_FI_DRIVER_VERSION="580.159.04"} 0)"));
}

// promtool's linter: gpuscope names clean; complaints only about DCGM names (dcgm-exporter's
// own conventions: camelCase labels, counters without _total). Skipped without promtool.
TEST(PrometheusHealth, PromtoolCheckMetrics) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  }
  const std::string path = "/tmp/gpuscope_health_promtool." + std::to_string(getpid()) + ".txt";
  for (bool dcgm : {false, true}) {
    std::ofstream(path) << render({dcgm, "node1"});
    FILE* p = popen(("promtool check metrics < " + path + " 2>&1").c_str(), "r");
    ASSERT_TRUE(p);
    std::string out;
    char buf[512];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    const int rc = pclose(p);
    if (!dcgm) {
      EXPECT_EQ(rc, 0) << out;
      EXPECT_EQ(out, "");
      continue;
    }
    std::istringstream lines(out);
    for (std::string l; std::getline(lines, l);) EXPECT_EQ(l.rfind("DCGM_", 0), 0u) << l;
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gpuscope::exporter
