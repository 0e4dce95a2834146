// `gpuscope monitor`: device metrics, processes and waste signals as JSONL or CSV, one
// record per GPU per interval; health counters (JSONL only) when they were read again;
// --record also writes an NVML fixture for the fake library.
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <type_traits>

#include <fmt/core.h>

#include "cli/command.h"
#include "cli/live_common.h"
#include "core/text.h"
#include "nvml/fixture_writer.h"
#include "nvml/sample_fields.h"
#include "render/csv_report.h"
#include "render/json_text.h"

namespace gpuscope::cli {
namespace {

// `gpuscope monitor`, as parsed (every value checked by the parser).
struct MonitorOptions {
  LiveCliOptions live;
  std::optional<int64_t> duration_ns;  // --duration
  std::string format = "jsonl";
  std::string output;
  std::string record;
};

// JSON and CSV have no NaN or infinity: a non-finite reading is written as null (an empty CSV
// cell, as for "not measured"), with one warning per field and GPU.
class NumberWriter {
 public:
  std::string json(std::optional<double> v, int32_t device, const char* field) {
    return finite(v, device, field) ? fmt::format("{}", *v) : "null";
  }
  std::string csv(std::optional<double> v, int32_t device, const char* field) {
    return finite(v, device, field) ? fmt::format("{}", *v) : "";
  }

 private:
  bool finite(std::optional<double> v, int32_t device, const char* field) {
    if (!v) return false;
    if (std::isfinite(*v)) return true;
    if (warned_.emplace(device, field).second) {
      fmt::print(stderr, "gpuscope: warning: GPU {} {} read as {}; written as null (not a number)\n", device, field,
                 *v);
    }
    return false;
  }
  std::set<std::pair<int32_t, std::string>> warned_;
};

template <typename T>
std::string json_opt(const std::optional<T>& v) {
  if (!v) return "null";
  if constexpr (std::is_same_v<T, bool>)
    return *v ? "true" : "false";
  else
    return fmt::format("{}", *v);
}

// One "health" record per GPU (not per MIG instance) when its counters were read again or a
// new XID arrived (core/device_health.h); null where the GPU does not support a reading.
std::string health_json(const DeviceHealth& h, const DeviceSample& s, const nvml::DeviceInfo& d,
                        const std::string& host, int64_t time_ns) {
  std::string xids = "null";
  if (h.xid_supported) {
    xids = "{";
    for (const XidCount& c : h.xid_counts) {
      xids += fmt::format(R"({}"{}":{})", xids.size() > 1 ? "," : "", c.xid, c.count);
    }
    xids += "}";
  }
  std::string links = "[";
  for (const NvlinkErrorCounters& l : h.nvlink) {
    links += fmt::format(R"({}{{"link":{},"replay":{},"recovery":{},"crc_flit":{},"crc_data":{}}})",
                         links.size() > 1 ? "," : "", l.link, json_opt(l.replay), json_opt(l.recovery),
                         json_opt(l.crc_flit), json_opt(l.crc_data));
  }
  links += "]";
  std::string reasons = "null";
  if (s.throttle_reasons) {
    reasons = "[";
    for (const ClocksEventReason& r : kClocksEventReasons) {
      if (!(*s.throttle_reasons & r.bit)) continue;
      reasons += fmt::format(R"({}"{}")", reasons.size() > 1 ? "," : "", r.name);
    }
    reasons += "]";
  }
  return fmt::format(
      R"({{"type":"health","time_ns":{},"host":{},"device":{},"uuid":{},"xid_errors_total":{},"xid_errors":{},"last_xid":{},)"
      R"("ecc_volatile_corrected":{},"ecc_volatile_uncorrected":{},"ecc_aggregate_corrected":{},"ecc_aggregate_uncorrected":{},)"
      R"("remapped_rows_correctable":{},"remapped_rows_uncorrectable":{},"remap_pending":{},"remap_failure":{},)"
      R"("pcie_replays":{},"nvlink":{},"power_limit_w":{},"clocks_event_reasons":{}}})",
      time_ns, json_string(host), h.device, json_string(d.uuid),
      h.xid_supported ? fmt::format("{}", h.xid_total) : "null", xids, json_opt(h.last_xid),
      json_opt(h.ecc_volatile_corrected), json_opt(h.ecc_volatile_uncorrected), json_opt(h.ecc_aggregate_corrected),
      json_opt(h.ecc_aggregate_uncorrected), json_opt(h.remapped_rows_corrected), json_opt(h.remapped_rows_uncorrected),
      json_opt(h.remap_pending), json_opt(h.remap_failure), json_opt(h.pcie_replays), links, json_opt(h.power_limit_w),
      reasons);
}

// The host's name, in every record: logs of several machines stay apart when merged.
std::string host_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

void write_jsonl(std::FILE* f, NumberWriter& num, const nvml::Sampler& sampler, const std::string& host,
                 const nvml::LiveSnapshot& snap, const std::vector<Signal>& signals) {
  for (size_t i = 0; i < snap.devices.size(); ++i) {
    const DeviceSample& s = snap.devices[i];
    const nvml::DeviceInfo& d = sampler.devices()[i];
    std::string line = fmt::format(R"({{"type":"device","time_ns":{},"interval_ns":{},"host":{},"device":{},)",
                                   s.time_ns, s.interval_ns, json_string(host), s.device);
    if (s.gpu_instance_id) line += fmt::format(R"("gpu_instance_id":{},)", *s.gpu_instance_id);
    line += fmt::format(R"("uuid":{},"name":{})", json_string(d.uuid), json_string(d.name));
    for (const nvml::SampleField& field : nvml::device_sample_fields()) {
      line += fmt::format(R"(,"{}":{})", field.name, num.json(field.get(s), s.device, field.name));
    }
    const nvml::ActiveCounters& c = snap.counters[i];
    line += fmt::format(
        R"(,"gpu_busy_s_total":{},"sm_active_s_total":{},"tensor_active_s_total":{},"dram_active_s_total":{}}})",
        num.json(c.gpu_busy_s, s.device, "gpu_busy_s_total"), num.json(c.sm_active_s, s.device, "sm_active_s_total"),
        num.json(c.tensor_active_s, s.device, "tensor_active_s_total"),
        num.json(c.dram_active_s, s.device, "dram_active_s_total"));
    fmt::print(f, "{}\n", line);
  }
  for (size_t i = 0; i < snap.health.size() && i < snap.devices.size(); ++i) {
    if (!snap.health[i].updated || snap.devices[i].gpu_instance_id) continue;
    fmt::print(f, "{}\n", health_json(snap.health[i], snap.devices[i], sampler.devices()[i], host, snap.time_ns));
  }
  for (const ProcessSample& p : snap.processes) {
    fmt::print(
        f,
        R"({{"type":"process","time_ns":{},"host":{},"device":{},"pid":{},"memory_used_bytes":{},"sm_util_pct":{},"mem_util_pct":{},"command":{},"user":{},"pod_uid":{},"slurm_job_id":{}}})"
        "\n",
        p.time_ns, json_string(host), p.device, p.pid,
        p.memory_used_bytes ? fmt::format("{}", *p.memory_used_bytes) : "null",
        num.json(p.sm_util_pct, p.device, "process sm_util_pct"),
        num.json(p.mem_util_pct, p.device, "process mem_util_pct"), json_string(p.command), json_string(p.user),
        json_string(p.pod_uid), json_string(p.slurm_job_id));
  }
  for (const Signal& sig : signals) {
    fmt::print(
        f,
        R"({{"type":"signal","time_ns":{},"since_ns":{},"host":{},"device":{},"signal":"{}","pid":{},"evidence":{},"text":{}}})"
        "\n",
        snap.time_ns, sig.since_ns, json_string(host), sig.device, signal_name(sig.kind),
        sig.process ? fmt::format("{}", sig.process->pid) : "null", json_string(sig.evidence),
        json_string(describe_signal(sig)));
  }
}

void write_csv_header(std::FILE* f) {
  std::string line = "time_ns,interval_ns,device,gpu_instance_id,uuid";
  for (const nvml::SampleField& field : nvml::device_sample_fields()) line += fmt::format(",{}", field.name);
  // host and name last: the columns before them keep their places for existing readers.
  fmt::print(f, "{},signals,host,name\n", line);
}

void write_csv(std::FILE* f, NumberWriter& num, const nvml::Sampler& sampler, const std::string& host,
               const nvml::LiveSnapshot& snap, const std::vector<Signal>& signals) {
  for (size_t i = 0; i < snap.devices.size(); ++i) {
    const DeviceSample& s = snap.devices[i];
    std::string line = fmt::format("{},{},{},{},{}", s.time_ns, s.interval_ns, s.device,
                                   s.gpu_instance_id ? fmt::format("{}", *s.gpu_instance_id) : "",
                                   csv_field(sampler.devices()[i].uuid));
    for (const nvml::SampleField& field : nvml::device_sample_fields()) {
      line += "," + num.csv(field.get(s), s.device, field.name);  // Empty cell: not measured.
    }
    std::string names;
    for (const Signal& sig : signals) {
      if (sig.device != s.device || sig.gpu_instance_id != s.gpu_instance_id) continue;
      if (!names.empty()) names += ' ';
      names += signal_name(sig.kind);
    }
    fmt::print(f, "{},{},{},{}\n", line, names, csv_field(host), csv_field(sampler.devices()[i].name));
  }
}

int run_monitor(const MonitorOptions& o) {
  auto settings = live_settings(o.live);
  if (!settings) return 2;
  const std::optional<int64_t>& duration_ns = o.duration_ns;
  const std::string host = host_name();
  std::FILE* out = stdout;
  if (!o.output.empty()) {
    out = std::fopen(o.output.c_str(), "w");
    if (!out) {
      fmt::print(stderr, "gpuscope: cannot write {}: {}; check the directory exists\n", o.output, std::strerror(errno));
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
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(w.status().message()));
      return 2;
    }
    recorder = std::move(*w);
  }
  install_interrupt_handlers();
  if (o.format == "csv") write_csv_header(out);

  settings->loop.should_stop = [] { return g_interrupted.load(); };
  settings->loop.first_wait_ns = settings->interval_ns;  // Every record covers one interval.
  nvml::LiveLoop loop(*sampler, settings->loop);
  NumberWriter num;
  int rc = 0;
  const int64_t frames = duration_ns ? std::max<int64_t>(1, *duration_ns / settings->interval_ns) : 0;
  loop.run([&](const nvml::LiveFrame& frame) {
    for (const std::string& w : frame.warnings) fmt::print(stderr, "gpuscope: warning: {}\n", terminal_safe(w));
    if (!frame.status.ok()) {
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(frame.status.message()));
      rc = 2;
      return false;
    }
    if (o.format == "csv")
      write_csv(out, num, *sampler, host, *frame.snapshot, *frame.signals);
    else
      write_jsonl(out, num, *sampler, host, *frame.snapshot, *frame.signals);
    std::fflush(out);
    if (recorder) {
      Status rs = recorder->write_frame(*frame.snapshot);
      if (!rs.ok()) {
        fmt::print(stderr, "gpuscope: {}\n", terminal_safe(rs.message()));
        rc = 2;
        return false;
      }
    }
    return frames == 0 || frame.index + 1 < frames;
  });
  if (out != stdout) std::fclose(out);
  return rc;
}

const CommandRegistration kMonitor{CommandSpec{
    "monitor",
    "Log per-GPU metrics (utilization beside SM/tensor activity), processes and waste signals "
    "as JSONL or CSV",
    40, [](CLI::App& app) -> std::function<int()> {
      auto o = std::make_shared<MonitorOptions>();
      add_live_options(app, o->live);
      app.add_option_function<std::string>(
             "--duration", [o](const std::string& text) { o->duration_ns = parse_duration_ns(text, 1'000'000'000); },
             "Stop after this long (default: until Ctrl-C); a bare number is seconds")
          ->type_name("DURATION")
          ->check(duration_check(DurationRule{"--duration", 1'000'000'000}));
      app.add_option("--format", o->format, "jsonl (one object per line, absent = null) or csv")
          ->check(one_of({"jsonl", "csv"}, "--format", "--format csv"))
          ->capture_default_str();
      app.add_option("--output,-o", o->output, "Write to FILE instead of stdout");
      app.add_option("--record", o->record, "Also write the raw NVML readings as a fixture for the fake NVML (tests)");
      app.footer(
          "Examples:\n"
          "  gpuscope monitor -o gpus.jsonl               # every second, until Ctrl-C\n"
          "  gpuscope monitor --format csv --interval 500ms --duration 10m > gpus.csv\n"
          "  gpuscope monitor --idle-after 5m | grep '\"type\":\"signal\"'\n\n"
          "Every record names the host (JSONL \"host\"; CSV host and name, the last columns).\n\n"
          "Exit codes: 0 stopped by --duration or Ctrl-C; 2 bad usage, no NVML or GPU, or the\n"
          "output cannot be written (one line on stderr says what).");
      return [o] { return run_monitor(*o); };
    }}};

}  // namespace
}  // namespace gpuscope::cli
