#include "exporter/server.h"

#include <time.h>

#include <charconv>
#include <chrono>
#include <cstdio>

#include <fmt/core.h>

#include "core/clock.h"
#include "exporter/basic_auth.h"
#include "exporter/tls.h"
#include "exporter/web_config.h"

namespace gpuscope::exporter {

namespace {

std::shared_ptr<const std::string> text(std::string s) { return std::make_shared<const std::string>(std::move(s)); }
}  // namespace

StatusOr<HttpSecurity> load_http_security(const std::string& path) {
  ASSIGN_OR_RETURN(WebConfig config, load_web_config(path));
  HttpSecurity security;
  if (config.tls) {
    ASSIGN_OR_RETURN(security.tls, TlsContext::create(*config.tls, path));
  }
  if (!config.basic_auth_users.empty()) {
    security.basic_auth = std::make_shared<BasicAuth>(config.basic_auth_users);
  }
  return security;
}

StatusOr<ListenAddress> parse_listen(std::string_view text) {
  auto bad = [&](const char* why) {
    return Status::error(
        fmt::format("--listen {}: {}; use HOST:PORT, e.g. 127.0.0.1:{}, [::1]:{}, or :{} for every interface", text,
                    why, kDefaultPort, kDefaultPort, kDefaultPort));
  };
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = text.substr(0, colon);
  std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (host.empty()) return bad("no host inside []");
  }
  int port = -1;
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || p != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return bad("port must be 0..65535");
  }
  return ListenAddress{std::string(host), port};
}

namespace {
nvml::LiveLoopOptions loop_options(const ServeOptions& o) {
  nvml::LiveLoopOptions l;
  l.interval_ns = o.interval_ns;
  l.first_wait_ns = o.interval_ns;  // start() takes the first sample itself.
  l.thresholds = o.thresholds;
  l.command_line = o.command_line;
  l.proc_root = o.proc_root;
  return l;
}
}  // namespace

LiveExporter::LiveExporter(std::unique_ptr<nvml::Sampler> sampler, ServeOptions options)
    : sampler_(std::move(sampler)),
      options_(std::move(options)),
      loop_(*sampler_, loop_options(options_)),
      http_([this](const HttpRequest& r) { return handle(r); }, options_.http, options_.security) {
  if (!options_.pod_resources_socket.empty()) {
    k8s::PodResourcesOptions po;
    po.socket_path = options_.pod_resources_socket;
    po.refresh_ns = options_.pod_resources_refresh_ns;
    po.module_path = options_.pod_resources_module;
    po.log = options_.log;  // Unset: the cache's own "gpuscope: " lines (these are not warnings).
    pods_ = std::make_unique<k8s::PodResourcesCache>(std::move(po));
  }
  if (!options_.log) {
    options_.log = [](const std::string& line) { std::fprintf(stderr, "gpuscope: warning: %s\n", line.c_str()); };
  }
}

LiveExporter::~LiveExporter() { stop(); }

void LiveExporter::publish(const nvml::LiveFrame& frame) {
  for (const std::string& w : frame.warnings) options_.log(w);
  if (!frame.status.ok()) {
    options_.log(frame.status.message());
    return;
  }
  ExpositionInput in;
  in.devices = &sampler_->devices();
  in.snapshot = frame.snapshot;
  in.signals = frame.signals;
  in.driver_version = sampler_->driver_version();
  const std::shared_ptr<const k8s::PodAssignments> pods = pods_ ? pods_->current() : nullptr;
  in.pods = pods.get();
  auto rendered = text(render_prometheus(in, options_.exposition));
  std::lock_guard<std::mutex> lock(mu_);
  text_ = std::move(rendered);
  last_sample_mono_ns_ = monotonic_ns();
}

HttpResponse LiveExporter::handle(const HttpRequest& request) const {
  HttpResponse res;
  if (request.path == "/metrics") {
    std::lock_guard<std::mutex> lock(mu_);
    if (!text_) {
      res.status = 503;
      res.body = text("no sample yet\n");
    } else {
      res.content_type = "text/plain; version=0.0.4; charset=utf-8";
      res.body = text_;
    }
  } else if (request.path == "/healthz") {
    if (healthy()) {
      res.body = text("ok\n");
    } else {
      res.status = 503;
      res.body = text("sampling is stale or has not started\n");
    }
  } else if (request.path == "/") {
    res.body = text("gpuscope exporter: /metrics, /healthz\n");
  } else {
    res.status = 404;
    res.body = text("not found; try /metrics\n");
  }
  return res;
}

Status LiveExporter::start() {
  RETURN_IF_ERROR(http_.bind(options_.listen.host, options_.listen.port));
  if (pods_) pods_->start();  // Its first answer (or absence) is known before the first sample.
  // The first sample needs a window (GPM wants >= 100 ms after Sampler::open's).
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  publish(loop_.step());
  sampler_thread_ = std::thread([this] {
    loop_.run([this](const nvml::LiveFrame& frame) {
      publish(frame);
      return true;
    });
  });
  http_.start();
  return ok_status();
}

void LiveExporter::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  loop_.stop();
  http_.stop();
  if (sampler_thread_.joinable()) sampler_thread_.join();
  if (pods_) pods_->stop();
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
  return monotonic_ns() - last_sample_mono_ns_ < 3 * options_.interval_ns + 5'000'000'000;
}

}  // namespace gpuscope::exporter
