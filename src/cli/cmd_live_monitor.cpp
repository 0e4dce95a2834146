// `gpuscope monitor`: device metrics, processes and waste signals as JSONL or CSV, one
// record per GPU per interval; --record also writes an NVML fixture for the fake library.
#include <time.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <thread>

#include <fmt/core.h>

#include "cli/command.h"
#include "cli/live_common.h"
#include "formats/json_text.h"
#include "nvml/fixture_writer.h"
#include "nvml/sample_fields.h"

namespace gpuscope::cli {
namespace {

struct MonitorOptions {
  LiveCliOptions live;
  std::string duration;
  std::string format = "jsonl";
  std::string output;
  std::string record;
};

std::string json_number(std::optional<double> v) { return v ? fmt::format("{}", *v) : "null"; }

void write_jsonl(std::FILE* f, const nvml::Sampler& sampler, const nvml::LiveSnapshot& snap,
                 const std::vector<Signal>& signals) {
  for (size_t i = 0; i < snap.devices.size(); ++i) {
    const DeviceSample& s = snap.devices[i];
    const nvml::DeviceInfo& d = sampler.devices()[i];
    std::string line = fmt::format(R"({{"type":"device","time_ns":{},"interval_ns":{},"device":{},)",
                                   s.time_ns, s.interval_ns, s.device);
    if (s.gpu_instance_id) line += fmt::format(R"("gpu_instance_id":{},)", *s.gpu_instance_id);
    line += fmt::format(R"("uuid":{},"name":{})", json_string(d.uuid), json_string(d.name));
    for (const nvml::SampleField& field : nvml::device_sample_fields()) {
      line += fmt::format(R"(,"{}":{})", field.name, json_number(field.get(s)));
    }
    const nvml::ActiveCounters& c = snap.counters[i];
    line += fmt::format(R"(,"gpu_busy_s_total":{},"sm_active_s_total":{},"tensor_active_s_total":{},"dram_active_s_total":{}}})",
                        json_number(c.gpu_busy_s), json_number(c.sm_active_s),
                        json_number(c.tensor_active_s), json_number(c.dram_active_s));
    fmt::print(f, "{}\n", line);
  }
  for (const ProcessSample& p : snap.processes) {
    fmt::print(f,
               R"({{"type":"process","time_ns":{},"device":{},"pid":{},"memory_used_bytes":{},"sm_util_pct":{},"mem_util_pct":{},"command":{},"user":{},"pod_uid":{},"slurm_job_id":{}}})"
               "\n",
               p.time_ns, p.device, p.pid,
               p.memory_used_bytes ? fmt::format("{}", *p.memory_used_bytes) : "null",
               json_number(p.sm_util_pct), json_number(p.mem_util_pct), json_string(p.command),
               json_string(p.user), json_string(p.pod_uid), json_string(p.slurm_job_id));
  }
  for (const Signal& sig : signals) {
    fmt::print(f, R"({{"type":"signal","time_ns":{},"since_ns":{},"device":{},"signal":"{}","pid":{},"evidence":{},"text":{}}})"
               "\n",
               snap.time_ns, sig.since_ns, sig.device, signal_name(sig.kind),
               sig.process ? fmt::format("{}", sig.process->pid) : "null",
               json_string(sig.evidence), json_string(describe_signal(sig)));
  }
}

void write_csv_header(std::FILE* f) {
  std::string line = "time_ns,interval_ns,device,gpu_instance_id,uuid";
  for (const nvml::SampleField& field : nvml::device_sample_fields()) line += fmt::format(",{}", field.name);
  fmt::print(f, "{},signals\n", line);
}

void write_csv(std::FILE* f, const nvml::Sampler& sampler, const nvml::LiveSnapshot& snap,
               const std::vector<Signal>& signals) {
  for (size_t i = 0; i < snap.devices.size(); ++i) {
    const DeviceSample& s = snap.devices[i];
    std::string line = fmt::format("{},{},{},{},{}", s.time_ns, s.interval_ns, s.device,
                                   s.gpu_instance_id ? fmt::format("{}", *s.gpu_instance_id) : "",
                                   sampler.devices()[i].uuid);
    for (const nvml::SampleField& field : nvml::device_sample_fields()) {
      auto v = field.get(s);
      line += v ? fmt::format(",{}", *v) : ",";  // Empty cell: not measured.
    }
    std::string names;
    for (const Signal& sig : signals) {
      if (sig.device != s.device || sig.gpu_instance_id != s.gpu_instance_id) continue;
      if (!names.empty()) names += ' ';
      names += signal_name(sig.kind);
    }
    fmt::print(f, "{},{}\n", line, names);
  }
}

int run_monitor(const MonitorOptions& o) {
  auto settings = live_settings(o.live);
  if (!settings) return 2;
  std::optional<int64_t> duration_ns;
  if (!o.duration.empty()) {
    auto d = parse_duration_ns(o.duration, "--duration");
    if (!d.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", d.status().message());
      return 2;
    }
    duration_ns = *d;
  }
  std::FILE* out = stdout;
  if (!o.output.empty()) {
    out = std::fopen(o.output.c_str(), "w");
    if (!out) {
      fmt::print(stderr, "gpuscope: cannot write {}: {}; check the directory exists\n", o.output,
                 std::strerror(errno));
      return 2;
    }
  }
  auto sampler = open_sampler_or_report();
  if (!sampler) return 2;
  std::unique_ptr<nvml::FixtureWriter> recorder;
  if (!o.record.empty()) {
    char when[64];
    std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    auto w = nvml::FixtureWriter::create(
        o.record, *sampler,
        fmt::format("recorded {} by gpuscope monitor --record, interval {}", when, o.live.interval));
    if (!w.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", w.status().message());
      return 2;
    }
    recorder = std::move(*w);
  }
  install_interrupt_handlers();
  if (o.format == "csv") write_csv_header(out);

  SignalTracker tracker(settings->thresholds);
  nvml::LiveSnapshot snap;
  const auto start = std::chrono::steady_clock::now();
  auto next = start;
  while (!g_interrupted.load()) {
    next += std::chrono::nanoseconds(settings->interval_ns);
    while (!g_interrupted.load() && std::chrono::steady_clock::now() < next) {
      std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
          next - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
    }
    if (g_interrupted.load()) break;
    Status st = sampler->sample(&snap);
    for (const std::string& w : sampler->take_warnings()) fmt::print(stderr, "gpuscope: warning: {}\n", w);
    if (!st.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", st.message());
      return 2;
    }
    std::vector<Signal> signals = tracker.update(snap.devices, snap.processes);
    if (o.format == "csv") write_csv(out, *sampler, snap, signals);
    else write_jsonl(out, *sampler, snap, signals);
    std::fflush(out);
    if (recorder) {
      Status rs = recorder->write_frame(snap);
      if (!rs.ok()) {
        fmt::print(stderr, "gpuscope: {}\n", rs.message());
        return 2;
      }
    }
    if (duration_ns && std::chrono::steady_clock::now() - start >=
                           std::chrono::nanoseconds(*duration_ns)) {
      break;
    }
  }
  if (out != stdout) std::fclose(out);
  return 0;
}

const CommandRegistration kMonitor{CommandSpec{
    "monitor",
    "Log per-GPU metrics (utilization beside SM/tensor activity), processes and waste signals "
    "as JSONL or CSV",
    40, [](CLI::App& app) -> std::function<int()> {
      auto o = std::make_shared<MonitorOptions>();
      add_live_options(app, o->live);
      app.add_option("--duration", o->duration, "Stop after this long (default: until Ctrl-C)");
      app.add_option("--format", o->format, "jsonl (one object per line, absent = null) or csv")
          ->check(CLI::IsMember({"jsonl", "csv"}))
          ->capture_default_str();
      app.add_option("--output,-o", o->output, "Write to FILE instead of stdout");
      app.add_option("--record", o->record,
                     "Also write the raw NVML readings as a fixture for the fake NVML (tests)");
      return [o] { return run_monitor(*o); };
    }}};

}  // namespace
}  // namespace gpuscope::cli
