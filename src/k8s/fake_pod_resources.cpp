#include "k8s/fake_pod_resources.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

extern char** environ;

namespace gpuscope::k8s::testing {

namespace {
// Reads the child's first line ("ready") within `timeout_ms`.
bool wait_ready(int fd, int timeout_ms) {
  std::string got;
  char c;
  while (got.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    if (read(fd, &c, 1) != 1) return false;
    got += c;
  }
  return got == "ready\n";
}
}  // namespace

FakePodResourcesServer::FakePodResourcesServer(std::vector<FakePod> pods) {
  // /tmp, not the test's temp dir: a unix socket path must fit in 108 bytes.
  char templ[] = "/tmp/gpuscope-podres-XXXXXX";
  if (!mkdtemp(templ)) throw std::runtime_error("mkdtemp failed");
  dir_ = templ;
  socket_path_ = dir_ + "/kubelet.sock";
  nlohmann::json j = nlohmann::json::array();
  for (const FakePod& p : pods) {
    nlohmann::json containers = nlohmann::json::array();
    for (const FakeContainer& c : p.containers) {
      containers.push_back({{"name", c.name}, {"resource", c.resource_name}, {"devices", c.device_ids}});
    }
    j.push_back({{"namespace", p.pod_namespace}, {"name", p.name}, {"containers", containers}});
  }
  std::ofstream(dir_ + "/pods.json") << j.dump();

  int out[2];
  if (pipe(out) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[1]);
  const std::string parent = std::to_string(getpid());
  char* argv[] = {const_cast<char*>(GPUSCOPE_FAKE_KUBELET), dir_.data(), const_cast<char*>(parent.c_str()), nullptr};
  const int rc = posix_spawn(&pid_, GPUSCOPE_FAKE_KUBELET, &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  const bool ready = rc == 0 && wait_ready(out[0], 20'000);
  close(out[0]);
  if (!ready) {
    stop();
    remove_dir();  // A constructor that throws runs no destructor.
    throw std::runtime_error(std::string("the fake kubelet ") + GPUSCOPE_FAKE_KUBELET + " did not start in " + dir_);
  }
}

void FakePodResourcesServer::stop() {
  // The socket goes first, so a client sees it gone, not a dying server refusing calls.
  unlink(socket_path_.c_str());
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }
}

void FakePodResourcesServer::remove_dir() {
  unlink((dir_ + "/pods.json").c_str());
  unlink((dir_ + "/calls").c_str());
  rmdir(dir_.c_str());
}

FakePodResourcesServer::~FakePodResourcesServer() {
  stop();
  remove_dir();
}

int FakePodResourcesServer::list_calls() const {
  struct stat st;
  return stat((dir_ + "/calls").c_str(), &st) == 0 ? static_cast<int>(st.st_size) : 0;
}

}  // namespace gpuscope::k8s::testing
