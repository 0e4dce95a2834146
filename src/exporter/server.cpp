#include "exporter/server.h"

#include <sys/socket.h>
#include <time.h>

#include <charconv>
#include <chrono>
#include <cstdio>

#include <fmt/core.h>
#include <httplib.h>

namespace gpuscope::exporter {

namespace {
int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

StatusOr<ListenAddress> parse_listen(std::string_view text) {
  auto bad = [&](const char* why) {
    return Status::error(fmt::format(
        "--listen {}: {}; use HOST:PORT, e.g. 127.0.0.1:{} or [::1]:{}", text, why, kDefaultPort,
        kDefaultPort));
  };
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = text.substr(0, colon);
  std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return bad("no host (write 0.0.0.0 to listen on every interface)");
  int port = -1;
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || p != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return bad("port must be 0..65535");
  }
  return ListenAddress{std::string(host), port};
}

LiveExporter::LiveExporter(std::unique_ptr<nvml::Sampler> sampler, ServeOptions options)
    : sampler_(std::move(sampler)), options_(std::move(options)), tracker_(options_.thresholds) {
  if (!options_.log) {
    options_.log = [](const std::string& line) { std::fprintf(stderr, "gpuscope: warning: %s\n", line.c_str()); };
  }
}

LiveExporter::~LiveExporter() { stop(); }

void LiveExporter::sample_once() {
  Status st = sampler_->sample(&snapshot_);
  for (const std::string& w : sampler_->take_warnings()) options_.log(w);
  if (!st.ok()) {
    options_.log(st.message());
    return;
  }
  std::vector<Signal> signals = tracker_.update(snapshot_.devices, snapshot_.processes);
  ExpositionInput in;
  in.devices = &sampler_->devices();
  in.snapshot = &snapshot_;
  in.signals = &signals;
  in.driver_version = sampler_->driver_version();
  auto text = std::make_shared<const std::string>(render_prometheus(in, options_.exposition));
  std::lock_guard<std::mutex> lock(mu_);
  text_ = std::move(text);
  last_sample_mono_ns_ = mono_ns();
}

void LiveExporter::sampler_loop() {
  auto next = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    next += std::chrono::nanoseconds(options_.interval_ns);
    if (cv_.wait_until(lock, next, [&] { return stopping_; })) break;
    // Fell behind (suspended, slow NVML): restart the schedule rather than burst.
    if (std::chrono::steady_clock::now() > next + std::chrono::nanoseconds(options_.interval_ns)) {
      next = std::chrono::steady_clock::now();
    }
    lock.unlock();
    sample_once();
    lock.lock();
  }
}

Status LiveExporter::start() {
  http_ = std::make_unique<httplib::Server>();
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<const std::string> text;
    {
      std::lock_guard<std::mutex> lock(mu_);
      text = text_;
    }
    if (!text) {
      res.status = 503;
      res.set_content("no sample yet\n", "text/plain");
      return;
    }
    res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
  });
  http_->Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    if (healthy()) {
      res.set_content("ok\n", "text/plain");
    } else {
      res.status = 503;
      res.set_content("sampling is stale or has not started\n", "text/plain");
    }
  });
  http_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("gpuscope exporter: /metrics, /healthz\n", "text/plain");
  });

  // httplib's default also sets SO_REUSEPORT, which would let a second exporter share the
  // port silently; keep only SO_REUSEADDR (fast restart) so "port in use" is an error.
  http_->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  const ListenAddress& a = options_.listen;
  if (a.port == 0) {
    bound_port_ = http_->bind_to_any_port(a.host.c_str());
  } else {
    bound_port_ = http_->bind_to_port(a.host.c_str(), a.port) ? a.port : -1;
  }
  if (bound_port_ <= 0) {
    return Status::error(fmt::format(
        "cannot listen on {}:{} (in use, or not an address of this host); choose another with "
        "--listen HOST:PORT",
        a.host, a.port));
  }
  // The first sample needs a window (GPM wants >= 100 ms between samples).
  std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<int64_t>(options_.interval_ns, 100'000'000)));
  sample_once();
  sampler_thread_ = std::thread([this] { sampler_loop(); });
  http_thread_ = std::thread([this] { http_->listen_after_bind(); });
  // httplib's stop() is a no-op until the accept loop runs; wait for it so that a stop()
  // right after start() cannot leave the HTTP thread running forever.
  for (int i = 0; i < 500 && !http_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return ok_status();
}

void LiveExporter::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (http_) http_->stop();
  if (http_thread_.joinable()) http_thread_.join();
  if (sampler_thread_.joinable()) sampler_thread_.join();
}

void LiveExporter::wait(const std::atomic<bool>& interrupted) {
  while (!interrupted.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) break;
  }
}

std::string LiveExporter::metrics_text() const {
  std::lock_guard<std::mutex> lock(mu_);
  return text_ ? *text_ : std::string();
}

bool LiveExporter::healthy() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!text_) return false;
  return mono_ns() - last_sample_mono_ns_ < 3 * options_.interval_ns + 5'000'000'000;
}

}  // namespace gpuscope::exporter
