// The exposition text over the fake NVML: names, units, labels, absent-is-absent, HELP/TYPE
// once per family, and `promtool check metrics` when promtool is installed.
#include "exporter/prometheus.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "core/text.h"
#include "nvml/fake_nvml_testing.h"
#include "nvml/process_identity.h"

namespace gpuscope::exporter {
namespace {

struct Rendered {
  std::unique_ptr<nvml::Sampler> sampler;
  nvml::LiveSnapshot snap;
  std::string text;
};

Rendered render_fixture(const std::string& fixture, ExpositionOptions options = {},
                        const char* lib = GPUSCOPE_FAKE_NVML_PATH) {
  Rendered r;
  nvml::testing::use_fixture(fixture);
  auto api = nvml::NvmlApi::load(lib);
  EXPECT_TRUE(api.ok()) << api.status().message();
  nvml::SamplerOptions so;
  so.proc_root = nvml::testing::testdata("proc");
  auto sampler = nvml::Sampler::open(std::move(*api), so);
  EXPECT_TRUE(sampler.ok()) << sampler.status().message();
  r.sampler = std::move(*sampler);
  std::this_thread::sleep_for(std::chrono::milliseconds(110));
  EXPECT_TRUE(r.sampler->sample(&r.snap).ok());
  SignalThresholds t;
  t.idle_after_ns = 0;
  SignalTracker tracker(t);
  std::vector<Signal> signals = tracker.update(r.snap.devices, r.snap.processes);
  ExpositionInput in{&r.sampler->devices(), &r.snap, &signals, r.sampler->driver_version()};
  r.text = render_prometheus(in, options);
  return r;
}

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

const char* kGpu0 = R"(gpu="0",uuid="GPU-00000000-1111-2222-3333-444444444444",model="NVIDIA H200")";

TEST(Prometheus, ValuesInBaseUnits) {
  Rendered r = render_fixture(nvml::testing::testdata("synthetic_2gpu.txt"));
  const std::string g0 = kGpu0;
  EXPECT_TRUE(has_line(r.text, "gpuscope_gpu_utilization_ratio{" + g0 + "} 1")) << r.text;
  EXPECT_TRUE(has_line(r.text, "gpuscope_sm_active_ratio{" + g0 + "} 0.965"));
  EXPECT_TRUE(has_line(r.text, "gpuscope_tensor_active_ratio{" + g0 + "} 0.9375"));
  EXPECT_TRUE(has_line(r.text, "gpuscope_power_watts{" + g0 + "} 650"));
  EXPECT_TRUE(has_line(r.text, "gpuscope_energy_joules_total{" + g0 + "} 1000"));
  EXPECT_TRUE(has_line(r.text, "gpuscope_sm_clock_hertz{" + g0 + "} 1980000000"));
  EXPECT_TRUE(has_line(r.text, "gpuscope_memory_used_bytes{" + g0 + "} 17179869184"));
  EXPECT_TRUE(has_line(r.text, "# TYPE gpuscope_sm_active_seconds_total counter"));
  EXPECT_TRUE(has_line(r.text, "gpuscope_metric_supported{" + g0 + ",metric=\"sm_active_pct\"} 1"));
  EXPECT_TRUE(has_line(r.text, "gpuscope_metric_supported{" + g0 + ",metric=\"nvlink_rx_bytes_per_s\"} 1"));
}

TEST(Prometheus, ProcessIdentityOnlyOnTheInfoMetric) {
  Rendered r = render_fixture(nvml::testing::testdata("synthetic_2gpu.txt"));
  EXPECT_TRUE(has_line(
      r.text,
      R"(gpuscope_process_info{gpu="0",uuid="GPU-00000000-1111-2222-3333-444444444444",pid="4242",command="python3 train.py --batch 16",user="root",pod_uid="8f9a5b2c-1d2e-4f3a-9b8c-7d6e5f4a3b2c",slurm_job_id=""} 1)"))
      << r.text;
  EXPECT_TRUE(has_line(
      r.text,
      R"(gpuscope_process_memory_used_bytes{gpu="1",uuid="GPU-55555555-6666-7777-8888-999999999999",pid="4343"} 4294967296)"));
  EXPECT_TRUE(has_line(
      r.text,
      R"(gpuscope_waste_signal{gpu="1",uuid="GPU-55555555-6666-7777-8888-999999999999",model="NVIDIA H200",signal="idle_holding_memory"} 1)"));
  EXPECT_TRUE(has_line(r.text, std::string("gpuscope_waste_signal{") + kGpu0 + ",signal=\"idle_holding_memory\"} 0"));
}

TEST(Prometheus, EachFamilyHasHelpAndTypeOnce) {
  Rendered r = render_fixture(nvml::testing::testdata("synthetic_2gpu.txt"), {true, "node1"});
  std::istringstream in(r.text);
  std::set<std::string> help, type, seen;
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("# HELP ", 0) == 0) {
      EXPECT_TRUE(help.insert(l.substr(7, l.find(' ', 7) - 7)).second) << l;
    } else if (l.rfind("# TYPE ", 0) == 0) {
      EXPECT_TRUE(type.insert(l.substr(7, l.find(' ', 7) - 7)).second) << l;
    } else if (!l.empty()) {
      seen.insert(l.substr(0, l.find_first_of("{ ")));
    }
  }
  for (const std::string& name : seen) {
    EXPECT_TRUE(help.count(name)) << name;
    EXPECT_TRUE(type.count(name)) << name;
  }
}

TEST(Prometheus, AbsentMetricsHaveNoSeries) {
  Rendered r = render_fixture(nvml::testing::testdata("synthetic_2gpu.txt"), {}, GPUSCOPE_FAKE_NVML_LEGACY_PATH);
  EXPECT_EQ(r.text.find("gpuscope_sm_active_ratio"), std::string::npos);
  EXPECT_EQ(r.text.find("gpuscope_energy_joules_total"), std::string::npos);
  EXPECT_EQ(r.text.find("gpuscope_sm_active_seconds_total"), std::string::npos);
  EXPECT_TRUE(has_line(r.text, std::string("gpuscope_metric_supported{") + kGpu0 + ",metric=\"sm_active_pct\"} 0"));
  EXPECT_TRUE(has_line(r.text, std::string("gpuscope_gpu_utilization_ratio{") + kGpu0 + "} 1"));
}

TEST(Prometheus, DcgmCompatibleNames) {
  Rendered r = render_fixture(nvml::testing::testdata("synthetic_2gpu.txt"), {true, "node1"});
  const std::string l =
      R"(gpu="0",UUID="GPU-00000000-1111-2222-3333-444444444444",pci_bus_id="00000000:18:00.0",device="nvidia0",)"
      R"(modelName="NVIDIA H200",Hostname="node1",DCGM_FI_DRIVER_VERSION="580.159.04")";
  EXPECT_TRUE(has_line(r.text, "DCGM_FI_DEV_GPU_UTIL{" + l + "} 100")) << r.text;
  EXPECT_TRUE(has_line(r.text, "DCGM_FI_PROF_SM_ACTIVE{" + l + "} 0.965"));
  EXPECT_TRUE(has_line(r.text, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{" + l + "} 0.9375"));
  EXPECT_TRUE(has_line(r.text, "DCGM_FI_DEV_FB_USED{" + l + "} 16384"));
  Rendered plain = render_fixture(nvml::testing::testdata("synthetic_2gpu.txt"));
  EXPECT_EQ(plain.text.find("DCGM_"), std::string::npos);
  // A driver without nvmlDeviceGetPciInfo_v3/_v2: the label is there, empty (= absent).
  Rendered legacy =
      render_fixture(nvml::testing::testdata("synthetic_2gpu.txt"), {true, "node1"}, GPUSCOPE_FAKE_NVML_LEGACY_PATH);
  EXPECT_NE(legacy.text.find(
                R"(DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-00000000-1111-2222-3333-444444444444",pci_bus_id="",)"),
            std::string::npos)
      << legacy.text;
}

TEST(Prometheus, LabelValuesAreEscaped) { EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd"); }

// One invalid label value makes a real Prometheus reject the whole scrape.
TEST(Prometheus, LabelValuesAreAlwaysValidUtf8) {
  EXPECT_EQ(escape_label_value("tr\xff"
                               "ain \xc3"),
            "tr\xef\xbf\xbd"
            "ain \xef\xbf\xbd");
  EXPECT_EQ(escape_label_value("caf\xc3\xa9"), "caf\xc3\xa9");
}

// testdata/nvml/proc/4444: invalid UTF-8, an escape sequence, secrets, 'é' across byte 200.
TEST(Prometheus, HostileCommandLineGivesAValidRedactedLabel) {
  Rendered r = render_fixture(nvml::testing::testdata("synthetic_hostile.txt"));
  EXPECT_TRUE(is_valid_utf8(r.text));
  EXPECT_EQ(r.text.find("hunter"), std::string::npos);
  EXPECT_EQ(r.text.find("tok3n"), std::string::npos);
  size_t at = r.text.find("pid=\"4444\",command=\"");
  ASSERT_NE(at, std::string::npos) << r.text;
  EXPECT_NE(r.text.find("--password=***", at), std::string::npos);
}

// promtool's linter on the real output (both name sets). Skipped without promtool.
TEST(Prometheus, PromtoolCheckMetrics) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  }
  for (bool dcgm : {false, true}) {
    Rendered r = render_fixture(nvml::testing::testdata("synthetic_2gpu.txt"), {dcgm, "node1"});
    const std::string path = "/tmp/gpuscope_promtool_input." + std::to_string(getpid()) + ".txt";
    std::ofstream(path) << r.text;
    std::string cmd = "promtool check metrics < " + path + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_TRUE(p);
    std::string out;
    char buf[512];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    int rc = pclose(p);
    if (!dcgm) {
      EXPECT_EQ(rc, 0) << out;
      EXPECT_EQ(out, "") << out;
    } else {
      // dcgm-exporter's own names break the linter's conventions (camelCase labels UUID,
      // modelName, Hostname; counters without _total, as its default-counters.csv declares
      // them); those are accepted, for dashboard compatibility, and nothing else.
      std::istringstream lines(out);
      bool camel = false;
      for (std::string l; std::getline(lines, l);) {
        EXPECT_EQ(l.rfind("DCGM_", 0), 0u) << l;
        camel |= l.find("'snake_case' not 'camelCase'") != std::string::npos;
      }
      EXPECT_TRUE(camel) << out;
    }
  }
}

}  // namespace
}  // namespace gpuscope::exporter
