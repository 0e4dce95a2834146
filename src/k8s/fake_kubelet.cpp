// gpuscope-fake-kubelet DIR PARENT_PID: for tests, a kubelet pod-resources server (the real
// proto, gRPC over DIR/kubelet.sock) answering List with the pods in DIR/pods.json and
// appending one byte to DIR/calls per List. Prints "ready" once serving; runs until killed,
// or until PARENT_PID (the test) exits.
//
// A process of its own, as the real kubelet is: a test process that also loaded the client
// module would otherwise hold two copies of the generated proto code, and protobuf aborts
// when one .proto is registered twice in its generated pool.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "kubelet/podresources/v1/api.grpc.pb.h"

namespace {

class FakeLister final : public v1::PodResourcesLister::Service {
 public:
  FakeLister(nlohmann::json pods, std::string calls_path)
      : pods_(std::move(pods)), calls_path_(std::move(calls_path)) {}

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    if (int fd = open(calls_path_.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0600); fd >= 0) {
      [[maybe_unused]] ssize_t n = write(fd, "x", 1);
      close(fd);
    }
    for (const auto& p : pods_) {
      v1::PodResources* pr = response->add_pod_resources();
      pr->set_name(p.at("name").get<std::string>());
      pr->set_namespace_(p.at("namespace").get<std::string>());
      for (const auto& c : p.at("containers")) {
        v1::ContainerResources* cr = pr->add_containers();
        cr->set_name(c.at("name").get<std::string>());
        if (c.at("resource").get<std::string>().empty()) continue;
        v1::ContainerDevices* d = cr->add_devices();
        d->set_resource_name(c.at("resource").get<std::string>());
        for (const auto& id : c.at("devices")) d->add_device_ids(id.get<std::string>());
      }
    }
    return grpc::Status::OK;
  }

 private:
  nlohmann::json pods_;
  std::string calls_path_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gpuscope-fake-kubelet DIR PARENT_PID\n");
    return 2;
  }
  // Never outlive the test that started it.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != std::atoi(argv[2])) return 1;
  const std::string dir = argv[1];
  std::ifstream in(dir + "/pods.json");
  nlohmann::json pods = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (pods.is_discarded()) {
    std::fprintf(stderr, "gpuscope-fake-kubelet: %s/pods.json is not JSON\n", dir.c_str());
    return 2;
  }
  FakeLister lister(std::move(pods), dir + "/calls");
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + dir + "/kubelet.sock", grpc::InsecureServerCredentials());
  builder.RegisterService(&lister);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "gpuscope-fake-kubelet: cannot serve on %s/kubelet.sock\n", dir.c_str());
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  server->Wait();
  return 0;
}
