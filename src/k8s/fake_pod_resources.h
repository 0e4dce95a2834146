// For tests: a fake kubelet pod-resources server (the real proto, gRPC over a unix socket in
// a fresh temp folder), answering List with the pods it is given. It runs as a process of its
// own (gpuscope-fake-kubelet, fake_kubelet.cpp says why), so the test process itself loads
// gRPC only through the client module, as gpuscope does.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gpuscope::k8s::testing {

struct FakeContainer {
  std::string name;
  std::string resource_name;  // e.g. nvidia.com/gpu
  std::vector<std::string> device_ids;
};
struct FakePod {
  std::string pod_namespace;
  std::string name;
  std::vector<FakeContainer> containers;
};

class FakePodResourcesServer {
 public:
  // Returns once the server answers; throws std::runtime_error if it does not start.
  explicit FakePodResourcesServer(std::vector<FakePod> pods);
  ~FakePodResourcesServer();  // Stops and removes the socket and its folder.
  FakePodResourcesServer(const FakePodResourcesServer&) = delete;
  FakePodResourcesServer& operator=(const FakePodResourcesServer&) = delete;
  const std::string& socket_path() const { return socket_path_; }
  // Stops serving and removes the socket (as when the kubelet goes away).
  void stop();
  int list_calls() const;

 private:
  void remove_dir();

  pid_t pid_ = 0;
  std::string dir_;
  std::string socket_path_;
};

}  // namespace gpuscope::k8s::testing
