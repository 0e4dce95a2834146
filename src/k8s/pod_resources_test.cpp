// The pod-resources client, through the real gRPC module (dlopen), against a fake kubelet
// speaking the real proto over a unix socket; and the cache without a socket or a module.
#include "k8s/pod_resources.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "k8s/fake_pod_resources.h"

namespace gpuscope::k8s {
namespace {

using testing::FakePod;
using testing::FakePodResourcesServer;

std::vector<FakePod> two_pods() {
  return {
      {"ml", "trainer-0", {{"pytorch", "nvidia.com/gpu", {"GPU-a"}}, {"sidecar", "", {}}}},
      {"serving", "llm-7f9c", {{"vllm", "nvidia.com/gpu", {"GPU-b::0"}}}},
      {"kube-system", "coredns", {{"coredns", "", {}}}},
  };
}

std::unique_ptr<PodResourcesClient> grpc_client() {
  auto c = load_pod_resources_client(GPUSCOPE_K8S_GRPC_MODULE);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? std::move(*c) : nullptr;
}

bool module_loaded() { return dlopen(GPUSCOPE_K8S_GRPC_MODULE, RTLD_NOW | RTLD_NOLOAD) != nullptr; }

TEST(ListPodResources, ReadsPodsFromTheKubelet) {
  FakePodResourcesServer kubelet(two_pods());
  auto client = grpc_client();
  ASSERT_NE(client, nullptr);
  auto a = client->list(kubelet.socket_path(), 2'000'000'000);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->pods, 3u);
  ASSERT_EQ(a->by_device.size(), 2u);
  EXPECT_EQ(a->by_device.at("GPU-a").at(0), (ContainerRef{"ml", "trainer-0", "pytorch"}));
  EXPECT_EQ(a->by_device.at("GPU-b").at(0), (ContainerRef{"serving", "llm-7f9c", "vllm"}));
  EXPECT_EQ(kubelet.list_calls(), 1);
}

TEST(ListPodResources, StoppedServerIsAnError) {
  FakePodResourcesServer kubelet(two_pods());
  kubelet.stop();
  auto client = grpc_client();
  ASSERT_NE(client, nullptr);
  auto gone = client->list(kubelet.socket_path(), 500'000'000);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find("List at " + kubelet.socket_path() + " failed: gRPC code"), std::string::npos)
      << gone.status().message();
}

TEST(PodResourcesModule, MissingOrBrokenModuleIsAnErrorNamingIt) {
  auto missing = load_pod_resources_client("/nonexistent/libgpuscope_k8s_grpc.so");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message().rfind("cannot load /nonexistent/libgpuscope_k8s_grpc.so: ", 0), 0u)
      << missing.status().message();
  const std::string junk = ::testing::TempDir() + "/libgpuscope_k8s_grpc.so";
  std::ofstream(junk) << "not an ELF file";
  auto broken = load_pod_resources_client(junk);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().message().rfind("cannot load " + junk + ": ", 0), 0u) << broken.status().message();
  unlink(junk.c_str());
}

TEST(PodResourcesModule, FoundInGpuscopeLibDirAndRefusesAnotherVersion) {
  const std::string module = GPUSCOPE_K8S_GRPC_MODULE;
  setenv("GPUSCOPE_LIB_DIR", module.substr(0, module.rfind('/')).c_str(), 1);
  auto found = load_pod_resources_client("");
  unsetenv("GPUSCOPE_LIB_DIR");
  ASSERT_TRUE(found.ok()) << found.status().message();
  // The entry point is the one exported name, and refuses a binary of another version.
  void* handle = dlopen(GPUSCOPE_K8S_GRPC_MODULE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr);
  auto entry = reinterpret_cast<PodResourcesClientEntry>(dlsym(handle, kPodResourcesClientEntry));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry("0.0.0-another"), nullptr);
  std::unique_ptr<PodResourcesClient> same(entry(GPUSCOPE_VERSION));
  EXPECT_NE(same, nullptr);
}

TEST(ListPodResources, StaleSocketFileIsAFailedCallNotAHang) {
  // The kubelet died without removing its socket: the file is there, nobody listens.
  char dir[] = "/tmp/gpuscope-podres-stale-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/kubelet.sock";
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);
  auto client = grpc_client();
  ASSERT_NE(client, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  auto a = client->list(path, 1'000'000'000);
  const auto waited = std::chrono::steady_clock::now() - t0;
  unlink(path.c_str());
  rmdir(dir);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("List at " + path + " failed: gRPC code"), std::string::npos)
      << a.status().message();
  EXPECT_LT(waited, std::chrono::seconds(5));  // Bounded by the deadline (1 s); slack for load.
}

TEST(PodResourcesCache, RefreshesLogsOnceAndDropsLabelsWhenTheKubeletStops) {
  auto kubelet = std::make_unique<FakePodResourcesServer>(two_pods());
  std::vector<std::string> lines;
  std::mutex lines_mu;
  PodResourcesOptions o;
  o.socket_path = kubelet->socket_path();
  o.refresh_ns = 50'000'000;
  o.timeout_ns = 500'000'000;
  o.module_path = GPUSCOPE_K8S_GRPC_MODULE;
  o.log = [&](const std::string& l) {
    std::lock_guard<std::mutex> lock(lines_mu);
    lines.push_back(l);
  };
  PodResourcesCache cache(o);
  cache.start();
  ASSERT_NE(cache.current(), nullptr);  // The first answer is there when start() returns.
  EXPECT_EQ(cache.current()->by_device.size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_GE(kubelet->list_calls(), 3);  // Refreshed on its own thread.
  kubelet->stop();
  for (int i = 0; i < 100 && cache.current(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(cache.current(), nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // Several failed refreshes.
  cache.stop();
  std::lock_guard<std::mutex> lock(lines_mu);
  // One line per change of state: labels, then no socket. A refresh that falls between the
  // server stopping and its socket going away says the call failed in between (a third state).
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  ASSERT_GE(lines.size(), 2u) << all;
  ASSERT_LE(lines.size(), 3u) << "one line per change of state:\n" << all;
  EXPECT_NE(lines.front().find("labels from the kubelet's pod-resources API"), std::string::npos) << all;
  EXPECT_NE(lines.back().find("no kubelet pod-resources socket"), std::string::npos) << all;
  if (lines.size() == 3) EXPECT_NE(lines[1].find("dropped until it answers"), std::string::npos) << all;
}

TEST(PodResourcesCache, AbsentSocketIsSaidOnceAndGivesNoLabelsWithoutLoadingGrpc) {
  const bool loaded_before = module_loaded();
  std::vector<std::string> lines;
  PodResourcesOptions o;
  o.socket_path = "/nonexistent/kubelet.sock";
  o.refresh_ns = 20'000'000;
  o.module_path = GPUSCOPE_K8S_GRPC_MODULE;
  o.log = [&](const std::string& l) { lines.push_back(l); };  // Refresh thread only after start().
  PodResourcesCache cache(o);
  cache.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  cache.stop();
  EXPECT_EQ(cache.current(), nullptr);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("normal outside Kubernetes"), std::string::npos);
  if (!loaded_before) {
    EXPECT_FALSE(module_loaded()) << "no socket: the gRPC module is not loaded";
  }
}

TEST(PodResourcesCache, MissingModuleIsOneWarningAndNoLabelsNeverACrash) {
  FakePodResourcesServer kubelet(two_pods());
  std::vector<std::string> lines;
  std::mutex lines_mu;
  PodResourcesOptions o;
  o.socket_path = kubelet.socket_path();
  o.refresh_ns = 20'000'000;
  o.module_path = "/nonexistent/lib/gpuscope/libgpuscope_k8s_grpc.so";
  o.log = [&](const std::string& l) {
    std::lock_guard<std::mutex> lock(lines_mu);
    lines.push_back(l);
  };
  PodResourcesCache cache(o);
  cache.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // Several refreshes.
  EXPECT_EQ(cache.current(), nullptr);
  cache.stop();
  EXPECT_EQ(kubelet.list_calls(), 0);
  std::lock_guard<std::mutex> lock(lines_mu);
  ASSERT_EQ(lines.size(), 1u) << "said once, not at every refresh";
  EXPECT_EQ(lines[0].rfind("warning: kubelet pod-resources client: cannot load "
                           "/nonexistent/lib/gpuscope/libgpuscope_k8s_grpc.so: ",
                           0),
            0u)
      << lines[0];
  EXPECT_NE(lines[0].find("serving without pod, namespace and container labels"), std::string::npos);
  EXPECT_NE(lines[0].find("GPUSCOPE_LIB_DIR"), std::string::npos);
  EXPECT_EQ(lines[0].find('\n'), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::k8s
