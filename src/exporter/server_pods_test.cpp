// pod, namespace, container labels in /metrics from a fake kubelet pod-resources server (the
// real proto over a unix socket) whose pods hold the fake NVML fixture's GPUs by UUID. The
// client is the real gRPC module, found and loaded as `gpuscope serve` does; without it the
// exporter serves on without pod labels.
#include <httplib.h>

#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "exporter/server.h"
#include "k8s/fake_pod_resources.h"
#include "nvml/fake_nvml_testing.h"

namespace gpuscope::exporter {
namespace {

using k8s::testing::FakePod;
using k8s::testing::FakePodResourcesServer;

// synthetic_2gpu.txt: GPU 0 runs pid 4242 (cgroup of pod UID 8f9a5b2c-...), GPU 1 runs pid
// 4343 (a Slurm job, no pod).
constexpr const char* kGpu0 = "GPU-00000000-1111-2222-3333-444444444444";
constexpr const char* kGpu1 = "GPU-55555555-6666-7777-8888-999999999999";

std::vector<FakePod> two_pods() {
  return {{"ml", "trainer-0", {{"pytorch", "nvidia.com/gpu", {kGpu0}}}},
          {"serving", "llm-7f9c", {{"vllm", "nvidia.com/gpu", {kGpu1}}}}};
}

std::unique_ptr<nvml::Sampler> fake_sampler() {
  nvml::testing::use_fixture(nvml::testing::testdata("synthetic_2gpu.txt"));
  auto api = nvml::NvmlApi::load(GPUSCOPE_FAKE_NVML_PATH);
  EXPECT_TRUE(api.ok());
  nvml::SamplerOptions so;
  so.proc_root = nvml::testing::testdata("proc");
  auto s = nvml::Sampler::open(std::move(*api), so);
  EXPECT_TRUE(s.ok());
  return std::move(*s);
}

struct Logged {
  std::mutex mu;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(l);
    };
  }
  size_t count(const std::string& part) {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (const auto& l : lines) n += l.find(part) != std::string::npos;
    return n;
  }
};

ServeOptions options(const std::string& socket, Logged& logged) {
  ServeOptions o;
  o.listen = {"127.0.0.1", 0};
  o.interval_ns = 100'000'000;
  o.pod_resources_socket = socket;
  o.pod_resources_refresh_ns = 100'000'000;
  o.log = logged.sink();
  return o;
}

std::string scrape(const LiveExporter& e) {
  httplib::Client client("127.0.0.1", e.port());
  auto res = client.Get("/metrics");
  EXPECT_TRUE(res);
  return res ? res->body : std::string();
}

const std::string kGpu0Pod = R"(pod="trainer-0",namespace="ml",container="pytorch")";
const std::string kGpu1Pod = R"(pod="llm-7f9c",namespace="serving",container="vllm")";

TEST(LiveExporterPods, PodsOfTheKubeletLabelGpusAndProcesses) {
  FakePodResourcesServer kubelet(two_pods());
  Logged logged;
  LiveExporter e(fake_sampler(), options(kubelet.socket_path(), logged));
  ASSERT_TRUE(e.start().ok());
  const std::string m = scrape(e);
  EXPECT_NE(m.find(std::string("gpuscope_gpu_utilization_ratio{gpu=\"0\",uuid=\"") + kGpu0 +
                   "\",model=\"NVIDIA H200\"," + kGpu0Pod + "}"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(std::string("gpuscope_memory_used_bytes{gpu=\"1\",uuid=\"") + kGpu1 + "\",model=\"NVIDIA H200\"," +
                   kGpu1Pod + "}"),
            std::string::npos)
      << m;
  // The process in the pod's cgroup, on the pod's GPU: the pod's labels on every process series.
  EXPECT_NE(m.find(std::string("gpuscope_process_memory_used_bytes{gpu=\"0\",uuid=\"") + kGpu0 + "\",pid=\"4242\"," +
                   kGpu0Pod + "}"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("pid=\"4242\"," + kGpu0Pod + ",command="), std::string::npos) << m;
  // The Slurm job's process on the serving pod's GPU has no pod UID, so it follows its GPU.
  EXPECT_NE(m.find("pid=\"4343\"," + kGpu1Pod), std::string::npos) << m;
  EXPECT_EQ(logged.count("labels from the kubelet's pod-resources API"), 1u);
  e.stop();
}

TEST(LiveExporterPods, NoServerMeansNoLabelsSaidOnce) {
  Logged logged;
  LiveExporter e(fake_sampler(), options("/nonexistent/pod-resources/kubelet.sock", logged));
  ASSERT_TRUE(e.start().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // Several refreshes.
  const std::string m = scrape(e);
  EXPECT_NE(m.find("gpuscope_gpu_utilization_ratio{"), std::string::npos) << m;
  EXPECT_EQ(m.find("pod=\""), std::string::npos) << m;
  EXPECT_EQ(logged.count("no kubelet pod-resources socket"), 1u);
  EXPECT_TRUE(e.healthy());
  e.stop();
}

TEST(LiveExporterPods, LabelsGoWhenTheKubeletStops) {
  FakePodResourcesServer kubelet(two_pods());
  Logged logged;
  LiveExporter e(fake_sampler(), options(kubelet.socket_path(), logged));
  ASSERT_TRUE(e.start().ok());
  ASSERT_NE(scrape(e).find(kGpu0Pod), std::string::npos);
  kubelet.stop();
  std::string m;
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    m = scrape(e);
    if (m.find("pod=\"") == std::string::npos) break;
  }
  EXPECT_EQ(m.find("pod=\""), std::string::npos) << m;
  EXPECT_NE(m.find("gpuscope_gpu_utilization_ratio{"), std::string::npos) << m;  // Still serving.
  EXPECT_EQ(logged.count("no kubelet pod-resources socket"), 1u);
  e.stop();
}

TEST(LiveExporterPods, MissingClientModuleIsOneWarningAndServesWithoutPodLabels) {
  FakePodResourcesServer kubelet(two_pods());
  Logged logged;
  ServeOptions o = options(kubelet.socket_path(), logged);
  o.pod_resources_module = "/nonexistent/lib/gpuscope/libgpuscope_k8s_grpc.so";
  LiveExporter e(fake_sampler(), o);
  ASSERT_TRUE(e.start().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // Several refreshes.
  const std::string m = scrape(e);
  EXPECT_NE(m.find("gpuscope_gpu_utilization_ratio{"), std::string::npos) << m;
  EXPECT_EQ(m.find("pod=\""), std::string::npos) << m;
  EXPECT_EQ(logged.count("warning: kubelet pod-resources client: cannot load "
                         "/nonexistent/lib/gpuscope/libgpuscope_k8s_grpc.so"),
            1u);
  EXPECT_EQ(kubelet.list_calls(), 0);
  EXPECT_TRUE(e.healthy());
  e.stop();
}

}  // namespace
}  // namespace gpuscope::exporter
