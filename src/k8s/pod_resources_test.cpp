// The pod-resources client against a fake kubelet speaking the real proto over a unix socket.
#include "k8s/pod_resources.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
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

TEST(ListPodResources, ReadsPodsFromTheKubelet) {
  FakePodResourcesServer kubelet(two_pods());
  auto a = list_pod_resources(kubelet.socket_path(), 2'000'000'000);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->pods, 3u);
  ASSERT_EQ(a->by_device.size(), 2u);
  EXPECT_EQ(a->by_device.at("GPU-a").at(0), (ContainerRef{"ml", "trainer-0", "pytorch"}));
  EXPECT_EQ(a->by_device.at("GPU-b").at(0), (ContainerRef{"serving", "llm-7f9c", "vllm"}));
}

TEST(ListPodResources, MissingSocketAndStoppedServerAreErrors) {
  auto none = list_pod_resources("/nonexistent/kubelet.sock", 500'000'000);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message().rfind("no kubelet pod-resources socket at /nonexistent/kubelet.sock", 0), 0u);
  FakePodResourcesServer kubelet(two_pods());
  kubelet.stop();
  auto gone = list_pod_resources(kubelet.socket_path(), 500'000'000);
  EXPECT_FALSE(gone.ok());
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
  const auto t0 = std::chrono::steady_clock::now();
  auto a = list_pod_resources(path, 1'000'000'000);
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
  ASSERT_EQ(lines.size(), 2u) << "one line per change of state";
  EXPECT_NE(lines[0].find("labels from the kubelet's pod-resources API"), std::string::npos);
  EXPECT_NE(lines[1].find("no kubelet pod-resources socket"), std::string::npos);
}

TEST(PodResourcesCache, AbsentSocketIsSaidOnceAndGivesNoLabels) {
  std::vector<std::string> lines;
  PodResourcesOptions o;
  o.socket_path = "/nonexistent/kubelet.sock";
  o.refresh_ns = 20'000'000;
  o.log = [&](const std::string& l) { lines.push_back(l); };  // Refresh thread only after start().
  PodResourcesCache cache(o);
  cache.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  cache.stop();
  EXPECT_EQ(cache.current(), nullptr);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("normal outside Kubernetes"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::k8s
