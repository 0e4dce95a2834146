// `gpuscope serve`'s engine: a background thread samples every interval, evaluates the waste
// signals and renders the exposition text once; HTTP GET /metrics returns the latest text
// (so a scrape costs a copy, not an NVML pass), /healthz says whether sampling is current.
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
#include "exporter/prometheus.h"
#include "nvml/sampler.h"

namespace httplib {
class Server;
}

namespace gpuscope::exporter {

constexpr int kDefaultPort = 9464;  // Not dcgm-exporter's 9400.

struct ListenAddress {
  std::string host;
  int port = 0;
};
// "127.0.0.1:9464", "0.0.0.0:9464", "[::1]:9464", "localhost:0" (0: any free port).
StatusOr<ListenAddress> parse_listen(std::string_view text);

struct ServeOptions {
  ListenAddress listen{"127.0.0.1", kDefaultPort};
  int64_t interval_ns = 1'000'000'000;
  ExpositionOptions exposition;
  SignalThresholds thresholds;
  // Receives warning lines (sampler failures); default: stderr.
  std::function<void(const std::string&)> log;
};

class LiveExporter {
 public:
  LiveExporter(std::unique_ptr<nvml::Sampler> sampler, ServeOptions options);
  ~LiveExporter();  // stop()
  // Takes the first sample (waits one interval so GPM has a window), binds, and starts the
  // sampling and HTTP threads. Error: the address cannot be bound.
  Status start();
  void stop();
  // Blocks until stop() is called from another thread or a signal handler's flag is seen.
  void wait(const std::atomic<bool>& interrupted);
  int port() const { return bound_port_; }
  std::string metrics_text() const;
  bool healthy() const;

 private:
  void sample_once();
  void sampler_loop();

  std::unique_ptr<nvml::Sampler> sampler_;
  ServeOptions options_;
  SignalTracker tracker_;
  std::unique_ptr<httplib::Server> http_;
  std::thread http_thread_;
  std::thread sampler_thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::shared_ptr<const std::string> text_;
  int64_t last_sample_mono_ns_ = 0;
  int bound_port_ = 0;
  nvml::LiveSnapshot snapshot_;  // Owned by the sampling thread.
};

}  // namespace gpuscope::exporter
