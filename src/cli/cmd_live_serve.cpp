// `gpuscope serve`: the Prometheus exporter (src/exporter). Binds to loopback unless told
// otherwise; port 9464 by default (dcgm-exporter's is 9400). Beyond loopback, one warning line:
// the metrics name users, pods and executables.
#include <unistd.h>

#include <fmt/core.h>

#include "cli/command.h"
#include "cli/live_common.h"
#include "core/text.h"
#include "exporter/server.h"

namespace gpuscope::cli {
namespace {

struct ServeCliOptions {
  LiveCliOptions live;
  std::string listen = fmt::format("127.0.0.1:{}", exporter::kDefaultPort);
  bool dcgm_compat = false;
  std::string pod_resources_socket = k8s::kDefaultPodResourcesSocket;
  std::string web_config_file;  // Empty: plain HTTP, no authentication.
};

int run_serve(const ServeCliOptions& o) {
  auto settings = live_settings(o.live);
  if (!settings) return 2;
  auto listen = exporter::parse_listen(o.listen);
  if (!listen.ok()) {
    fmt::print(stderr, "gpuscope: {}\n", terminal_safe(listen.status().message()));
    return 2;
  }
  exporter::HttpSecurity security;
  if (!o.web_config_file.empty()) {
    auto loaded = exporter::load_http_security(o.web_config_file);
    if (!loaded.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(loaded.status().message()));
      return 2;
    }
    security = std::move(loaded).value();
  }
  auto sampler = open_sampler_or_report();
  if (!sampler) return 2;
  const size_t gpus = sampler->devices().size();
  exporter::ServeOptions so;
  so.listen = *listen;
  so.interval_ns = settings->interval_ns;
  so.thresholds = settings->thresholds;
  so.command_line = settings->loop.command_line;
  so.proc_root = settings->loop.proc_root;
  so.exposition.dcgm_compat = o.dcgm_compat;
  so.security = security;
  so.pod_resources_socket = o.pod_resources_socket == "none" ? "" : o.pod_resources_socket;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  so.exposition.hostname = host;
  install_interrupt_handlers();
  exporter::LiveExporter server(std::move(sampler), so);
  Status st = server.start();
  if (!st.ok()) {
    fmt::print(stderr, "gpuscope: {}\n", terminal_safe(st.message()));
    return 2;
  }
  if (listen->host.empty()) {
    fmt::print(stderr, "gpuscope: --listen {}: listening on every interface ({})\n", o.listen, server.bound_address());
  }
  if (!exporter::is_loopback_host(listen->host)) {
    fmt::print(stderr,
               "gpuscope: warning: {} is reachable beyond this host: anyone who can connect reads "
               "GPU metrics, users, pods and {}; firewall it or use --listen 127.0.0.1:PORT\n",
               server.bound_address(),
               o.live.process_args ? "full command lines (--process-args)" : "executable names");
  }
  fmt::print(stderr, "gpuscope: serving {}://{}/metrics{} ({} GPU entries, every {:.1f} s); Ctrl-C stops\n",
             security.tls ? "https" : "http", server.bound_address(), security.basic_auth ? " (basic auth)" : "", gpus,
             settings->interval_ns / 1e9);
  server.wait(g_interrupted);
  server.stop();
  return 0;
}

const CommandRegistration kServe{
    CommandSpec{"serve", "Prometheus exporter: /metrics (gpuscope_* and optional DCGM names), /healthz", 50,
                [](CLI::App& app) -> std::function<int()> {
                  auto o = std::make_shared<ServeCliOptions>();
                  add_live_options(app, o->live);
                  app.add_option("--listen", o->listen,
                                 "HOST:PORT to bind; loopback by default, :PORT or 0.0.0.0:PORT for every interface")
                      ->capture_default_str();
                  app.add_flag("--dcgm-compat", o->dcgm_compat,
                               "Also emit dcgm-exporter names (DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_DEV_GPU_UTIL, ...)");
                  app.add_option("--pod-resources-socket", o->pod_resources_socket,
                                 "The kubelet's pod-resources socket, read every 10s for pod, namespace and "
                                 "container labels (no socket: no such labels); none: never ask")
                      ->capture_default_str();
                  app.add_option("--web.config.file", o->web_config_file,
                                 "TLS and basic auth: a Prometheus exporter-toolkit web config file "
                                 "(tls_server_config, basic_auth_users; docs/live.md)");
                  app.footer(
                      "\nExamples:\n"
                      "  gpuscope serve                               # 127.0.0.1:9464, this host only\n"
                      "  gpuscope serve --listen :9464 --dcgm-compat  # all interfaces, DCGM names too\n"
                      "  curl -s localhost:9464/metrics | grep gpuscope_sm_active_ratio\n\n"
                      "In a Kubernetes pod, GPUs and processes get pod, namespace and container labels from\n"
                      "the kubelet's socket (mounted by deploy/kubernetes); without it, none (said once).\n\n"
                      "Exit codes: 0 stopped by Ctrl-C or SIGTERM; 2 bad usage, no NVML or GPU, or the\n"
                      "address cannot be bound (one line on stderr says what).");
                  return [o] { return run_serve(*o); };
                }}};

}  // namespace
}  // namespace gpuscope::cli
