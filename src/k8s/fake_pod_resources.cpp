#include "k8s/fake_pod_resources.h"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>

#include <grpcpp/grpcpp.h>

#include "kubelet/podresources/v1/api.grpc.pb.h"

namespace gpuscope::k8s::testing {

struct FakePodResourcesServer::Impl final : v1::PodResourcesLister::Service {
  std::vector<FakePod> pods;
  std::atomic<int> calls{0};
  std::unique_ptr<grpc::Server> server;

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    ++calls;
    for (const FakePod& p : pods) {
      v1::PodResources* pr = response->add_pod_resources();
      pr->set_name(p.name);
      pr->set_namespace_(p.pod_namespace);
      for (const FakeContainer& c : p.containers) {
        v1::ContainerResources* cr = pr->add_containers();
        cr->set_name(c.name);
        if (c.resource_name.empty()) continue;
        v1::ContainerDevices* d = cr->add_devices();
        d->set_resource_name(c.resource_name);
        for (const std::string& id : c.device_ids) d->add_device_ids(id);
      }
    }
    return grpc::Status::OK;
  }
};

FakePodResourcesServer::FakePodResourcesServer(std::vector<FakePod> pods) : impl_(std::make_unique<Impl>()) {
  impl_->pods = std::move(pods);
  // /tmp, not the test's temp dir: a unix socket path must fit in 108 bytes.
  char templ[] = "/tmp/gpuscope-podres-XXXXXX";
  if (!mkdtemp(templ)) throw std::runtime_error("mkdtemp failed");
  dir_ = templ;
  socket_path_ = dir_ + "/kubelet.sock";
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + socket_path_, grpc::InsecureServerCredentials());
  builder.RegisterService(impl_.get());
  impl_->server = builder.BuildAndStart();
  if (!impl_->server) throw std::runtime_error("cannot serve on " + socket_path_);
}

void FakePodResourcesServer::stop() {
  if (impl_->server) {
    impl_->server->Shutdown();
    impl_->server->Wait();
    impl_->server.reset();
  }
  unlink(socket_path_.c_str());
}

FakePodResourcesServer::~FakePodResourcesServer() {
  stop();
  rmdir(dir_.c_str());
}

int FakePodResourcesServer::list_calls() const { return impl_->calls.load(); }

}  // namespace gpuscope::k8s::testing
