// `gpuscope serve`'s engine: a background thread runs the live loop (nvml/live_loop.h) and
// renders the exposition text once per sample; HTTP GET /metrics returns the latest text (so
// a scrape costs a pointer copy, not an NVML pass), /healthz says whether sampling is current.
// The HTTP side (exporter/http_server.h) bounds every input and never gives a client a thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "core/signals.h"
#include "core/status.h"
#include "exporter/http_server.h"
#include "exporter/prometheus.h"
#include "k8s/pod_resources.h"
#include "nvml/live_loop.h"
#include "nvml/sampler.h"

namespace gpuscope::exporter {

constexpr int kDefaultPort = 9464;  // Not dcgm-exporter's 9400.

struct ListenAddress {
  std::string host;  // Empty: every interface.
  int port = 0;
};
// "127.0.0.1:9464", "0.0.0.0:9464", "[::1]:9464", "localhost:0" (0: any free port), and
// ":9464" for every interface (host empty).
StatusOr<ListenAddress> parse_listen(std::string_view text);

// `--web.config.file PATH` (exporter/web_config.h): TLS context and users. Error, one line
// naming the file and the field.
StatusOr<HttpSecurity> load_http_security(const std::string& path);

struct ServeOptions {
  ListenAddress listen{"127.0.0.1", kDefaultPort};
  int64_t interval_ns = 1'000'000'000;
  ExpositionOptions exposition;
  SignalThresholds thresholds;
  // What the `command` label holds (nvml::CommandLine); executable names unless opted in.
  nvml::CommandLine command_line = nvml::CommandLine::kExecutable;
  std::string proc_root = "/proc";  // For the executable names.
  HttpLimits http;
  // TLS and basic authentication from `--web.config.file` (load_http_security); none by default.
  HttpSecurity security;
  // The kubelet's pod-resources socket for pod, namespace, container labels; empty: none.
  // Asked every pod_resources_refresh_ns on its own thread (k8s/pod_resources.h).
  std::string pod_resources_socket = k8s::kDefaultPodResourcesSocket;
  int64_t pod_resources_refresh_ns = 10'000'000'000;
  // The gRPC client module (k8s/pod_resources_client.h), loaded only when the socket is there;
  // empty: libgpuscope_k8s_grpc.so from gpuscope's library folders. Missing: one warning, no
  // pod labels.
  std::string pod_resources_module;
  // Receives warning lines (sampler failures); default: stderr.
  std::function<void(const std::string&)> log;
};

class LiveExporter {
 public:
  LiveExporter(std::unique_ptr<nvml::Sampler> sampler, ServeOptions options);
  ~LiveExporter();  // stop()
  // Binds, takes the first sample (after GPM's window), and starts the sampling and HTTP
  // threads. Error: the address cannot be bound.
  Status start();
  void stop();
  // Blocks until stop() is called from another thread or a signal handler's flag is seen.
  void wait(const std::atomic<bool>& interrupted);
  int port() const { return http_.port(); }
  const std::string& bound_address() const { return http_.bound_address(); }
  std::string metrics_text() const;
  bool healthy() const;

 private:
  void publish(const nvml::LiveFrame& frame);
  HttpResponse handle(const HttpRequest& request) const;

  std::unique_ptr<nvml::Sampler> sampler_;
  ServeOptions options_;
  nvml::LiveLoop loop_;                           // Runs on sampler_thread_.
  std::unique_ptr<k8s::PodResourcesCache> pods_;  // Null without a socket path.
  HttpServer http_;
  std::thread sampler_thread_;
  mutable std::mutex mu_;
  bool stopping_ = false;
  std::shared_ptr<const std::string> text_;
  int64_t last_sample_mono_ns_ = 0;
};

}  // namespace gpuscope::exporter
