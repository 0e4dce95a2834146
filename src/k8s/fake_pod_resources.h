// For tests: a fake kubelet pod-resources server (the real proto, gRPC over a unix socket in
// a fresh temp folder), answering List with the pods it is given.
#pragma once

#include <memory>
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
  explicit FakePodResourcesServer(std::vector<FakePod> pods);
  ~FakePodResourcesServer();  // Stops and removes the socket and its folder.
  const std::string& socket_path() const { return socket_path_; }
  // Stops serving and removes the socket (as when the kubelet goes away).
  void stop();
  int list_calls() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string dir_;
  std::string socket_path_;
};

}  // namespace gpuscope::k8s::testing
