#include "exporter/prometheus.h"

#include <cmath>
#include <cstdlib>
#include <optional>

#include <fmt/core.h>

#include "core/text.h"
#include "exporter/exposition_text.h"
#include "exporter/prometheus_health.h"
#include "nvml/sample_fields.h"

namespace gpuscope::exporter {

namespace {

using nvml::DeviceInfo;

struct Family {
  const char* name;
  const char* type;  // "gauge" or "counter".
  const char* help;
};

void header(std::string& out, const Family& f) { family_header(out, f.name, f.type, f.help); }

std::string device_labels(const DeviceInfo& d) {
  std::string l = fmt::format("gpu=\"{}\",uuid=\"{}\",model=\"{}\"", d.index, escape_label_value(d.uuid),
                              escape_label_value(d.name));
  if (d.gpu_instance_id) l += fmt::format(",gpu_instance=\"{}\"", *d.gpu_instance_id);
  return l;
}

// dcgm-exporter's labels, in its order: gpu, UUID, pci_bus_id, device, modelName, Hostname, and
// the driver version as the label DCGM_FI_DRIVER_VERSION (a "label" field of its default
// counters). pci_bus_id is NVML's busId ("00000000:3B:00.0"), empty where NVML has none.
std::string dcgm_labels(const DeviceInfo& d, const std::string& hostname, const std::string& driver) {
  std::string l = fmt::format(
      "gpu=\"{}\",UUID=\"{}\",pci_bus_id=\"{}\",device=\"nvidia{}\",modelName=\"{}\",Hostname=\"{}\","
      "DCGM_FI_DRIVER_VERSION=\"{}\"",
      d.index, escape_label_value(d.uuid), escape_label_value(d.pci_bus_id), d.index, escape_label_value(d.name),
      escape_label_value(hostname), escape_label_value(driver));
  if (d.gpu_instance_id) l += fmt::format(",GPU_I_ID=\"{}\"", *d.gpu_instance_id);
  return l;
}

// pod, namespace, container (dcgm-exporter's names) of a GPU or process whose pod is known.
std::string pod_labels(const k8s::ContainerRef* c) {
  if (!c) return {};
  return fmt::format(",pod=\"{}\",namespace=\"{}\",container=\"{}\"", escape_label_value(c->pod),
                     escape_label_value(c->pod_namespace), escape_label_value(c->container));
}

template <typename T>
std::optional<double> opt(const std::optional<T>& v, double scale = 1.0) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * scale;
}

// One family over all devices; `get` returns the value for a device or nullopt.
template <typename Get>
void device_family(std::string& out, const Family& f, const ExpositionInput& in, const std::vector<std::string>& labels,
                   Get get) {
  bool any = false;
  const auto& snap = *in.snapshot;
  for (size_t i = 0; i < in.devices->size() && i < snap.devices.size(); ++i) {
    std::optional<double> v = get(snap.devices[i], snap.counters[i]);
    if (!v) continue;
    if (!any) header(out, f);
    any = true;
    value_line(out, f.name, labels[i], *v);
  }
}

// The per-device families of DeviceSample fields, in exposition order: the field
// (GPUSCOPE_DEVICE_SAMPLE_FIELDS in core/device_sample.h), the family's name and help. The value's
// scale and the family's type come from the field's unit.
struct SampleFamily {
  const char* field;
  const char* name;
  const char* help;
};

template <auto kMember>
constexpr const char* field_name(const char* name) {  // Compiles only for a DeviceSample member.
  return name;
}

#define GPUSCOPE_SAMPLE_FAMILY(member, name, help) \
  SampleFamily { field_name<&DeviceSample::member>(#member), name, help }
constexpr SampleFamily kSampleFamilies[] = {
    GPUSCOPE_SAMPLE_FAMILY(gpu_util_pct, "gpuscope_gpu_utilization_ratio",
                           "NVML utilization.gpu: share of the driver's sample period with any kernel running (what "
                           "nvidia-smi shows; one tiny kernel reads 1)."),
    GPUSCOPE_SAMPLE_FAMILY(mem_util_pct, "gpuscope_memory_utilization_ratio",
                           "NVML utilization.memory: share of the sample period device memory was read or written."),
    GPUSCOPE_SAMPLE_FAMILY(sm_active_pct, "gpuscope_sm_active_ratio",
                           "GPM SM_UTIL: share of SM cycles with at least one warp resident, averaged over SMs, over "
                           "the sample interval."),
    GPUSCOPE_SAMPLE_FAMILY(sm_occupancy_pct, "gpuscope_sm_occupancy_ratio",
                           "GPM SM_OCCUPANCY: resident warps over the maximum, averaged over SMs."),
    GPUSCOPE_SAMPLE_FAMILY(tensor_active_pct, "gpuscope_tensor_active_ratio",
                           "GPM ANY_TENSOR_UTIL: share of cycles any tensor pipe was active."),
    GPUSCOPE_SAMPLE_FAMILY(tensor_hmma_pct, "gpuscope_tensor_hmma_active_ratio",
                           "GPM HMMA_TENSOR_UTIL: half-precision tensor pipe activity."),
    GPUSCOPE_SAMPLE_FAMILY(tensor_imma_pct, "gpuscope_tensor_imma_active_ratio",
                           "GPM IMMA_TENSOR_UTIL: integer tensor pipe activity."),
    GPUSCOPE_SAMPLE_FAMILY(tensor_dfma_pct, "gpuscope_tensor_dfma_active_ratio",
                           "GPM DFMA_TENSOR_UTIL: FP64 tensor pipe activity."),
    GPUSCOPE_SAMPLE_FAMILY(dram_bw_pct, "gpuscope_dram_active_ratio",
                           "GPM DRAM_BW_UTIL: DRAM bandwidth used over peak."),
    GPUSCOPE_SAMPLE_FAMILY(fp64_pct, "gpuscope_fp64_active_ratio", "GPM FP64_UTIL: FP64 pipe activity."),
    GPUSCOPE_SAMPLE_FAMILY(fp32_pct, "gpuscope_fp32_active_ratio", "GPM FP32_UTIL: FP32 pipe activity."),
    GPUSCOPE_SAMPLE_FAMILY(fp16_pct, "gpuscope_fp16_active_ratio", "GPM FP16_UTIL: FP16 pipe activity."),
    GPUSCOPE_SAMPLE_FAMILY(memory_used_bytes, "gpuscope_memory_used_bytes", "Device memory in use."),
    GPUSCOPE_SAMPLE_FAMILY(memory_total_bytes, "gpuscope_memory_total_bytes", "Device memory size."),
    GPUSCOPE_SAMPLE_FAMILY(power_w, "gpuscope_power_watts", "Power draw."),
    GPUSCOPE_SAMPLE_FAMILY(energy_j, "gpuscope_energy_joules_total", "Energy consumed since the driver was loaded."),
    GPUSCOPE_SAMPLE_FAMILY(sm_clock_mhz, "gpuscope_sm_clock_hertz", "SM clock."),
    GPUSCOPE_SAMPLE_FAMILY(mem_clock_mhz, "gpuscope_memory_clock_hertz", "Memory clock."),
    GPUSCOPE_SAMPLE_FAMILY(temperature_c, "gpuscope_temperature_celsius", "GPU die temperature."),
    GPUSCOPE_SAMPLE_FAMILY(throttle_reasons, "gpuscope_clocks_event_reasons",
                           "NVML clocks event (throttle) reasons bitmask; 0 none, 1 idle, see nvmlClocksEventReasons."),
    GPUSCOPE_SAMPLE_FAMILY(pcie_tx_bytes_per_s, "gpuscope_pcie_tx_bytes_per_second", "PCIe transmit throughput."),
    GPUSCOPE_SAMPLE_FAMILY(pcie_rx_bytes_per_s, "gpuscope_pcie_rx_bytes_per_second", "PCIe receive throughput."),
    GPUSCOPE_SAMPLE_FAMILY(nvlink_tx_bytes_per_s, "gpuscope_nvlink_tx_bytes_per_second",
                           "NVLink transmit throughput, all links."),
    GPUSCOPE_SAMPLE_FAMILY(nvlink_rx_bytes_per_s, "gpuscope_nvlink_rx_bytes_per_second",
                           "NVLink receive throughput, all links."),
};
#undef GPUSCOPE_SAMPLE_FAMILY

double prometheus_scale(SampleUnit unit) {
  switch (unit) {
    case SampleUnit::kPercent:
      return 0.01;  // Prometheus ratios are 0-1.
    case SampleUnit::kMegahertz:
      return 1e6;
    default:
      return 1.0;
  }
}

const nvml::SampleField& sample_field(std::string_view name) {
  for (const nvml::SampleField& f : nvml::device_sample_fields()) {
    if (name == f.name) return f;
  }
  std::abort();  // Unreachable: field_name<> checked the name at compile time.
}

}  // namespace

std::string escape_label_value(std::string_view raw) {
  // Prometheus rejects a whole scrape (the target goes down) on one label value that is not
  // valid UTF-8, so invalid bytes become U+FFFD here, whatever the caller passed.
  const std::string v = to_valid_utf8(raw);
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string render_prometheus(const ExpositionInput& in, const ExpositionOptions& options) {
  std::string out;
  out.reserve(16384);
  header(out, {"gpuscope_exporter_info", "gauge", "gpuscope version and NVIDIA driver version; always 1."});
  value_line(out, "gpuscope_exporter_info",
             fmt::format("version=\"{}\",driver=\"{}\"", GPUSCOPE_VERSION, escape_label_value(in.driver_version)), 1);
  if (!in.snapshot || !in.devices) return out;
  const nvml::LiveSnapshot& snap = *in.snapshot;

  auto gpu_uuid = [&](int32_t index) {
    for (const DeviceInfo& d : *in.devices) {
      if (d.index == index && !d.gpu_instance_id) return d.uuid;
    }
    return std::string();
  };
  const k8s::PodAssignments no_pods;
  std::vector<k8s::ProcessRef> process_refs;
  for (const ProcessSample& p : snap.processes) process_refs.push_back({gpu_uuid(p.device), p.pod_uid});
  const k8s::PodIndex pods(in.pods ? *in.pods : no_pods, process_refs);

  std::vector<std::string> labels;
  for (const DeviceInfo& d : *in.devices) labels.push_back(device_labels(d) + pod_labels(pods.for_device(d.uuid)));

  header(out, {"gpuscope_last_sample_timestamp_seconds", "gauge", "Unix time of the end of the latest sample."});
  value_line(out, "gpuscope_last_sample_timestamp_seconds", "", snap.time_ns / 1e9);

  using S = const DeviceSample&;
  using C = const nvml::ActiveCounters&;
#define GPUSCOPE_COUNTER(name, help, expr) \
  device_family(out, {name, "counter", help}, in, labels, [&](S s, C c) { return expr; })

  for (const SampleFamily& family : kSampleFamilies) {
    const nvml::SampleField& f = sample_field(family.field);
    const char* type = f.unit == SampleUnit::kJoulesTotal ? "counter" : "gauge";
    device_family(out, {family.name, type, family.help}, in, labels, [&](S s, C) -> std::optional<double> {
      const std::optional<double> v = f.get(s);
      if (!v) return std::nullopt;
      return *v * prometheus_scale(f.unit);
    });
  }
  GPUSCOPE_COUNTER(
      "gpuscope_gpu_busy_seconds_total",
      "Seconds with any kernel running (utilization x interval, summed); rate() gives utilization over any window.",
      c.gpu_busy_s);
  GPUSCOPE_COUNTER("gpuscope_sm_active_seconds_total",
                   "SM-active seconds (SM active ratio x interval, summed); rate() gives SM active over any window.",
                   c.sm_active_s);
  GPUSCOPE_COUNTER("gpuscope_tensor_active_seconds_total",
                   "Tensor-active seconds (tensor active ratio x interval, summed).", c.tensor_active_s);
  GPUSCOPE_COUNTER("gpuscope_dram_active_seconds_total",
                   "DRAM-active seconds (DRAM bandwidth ratio x interval, summed).", c.dram_active_s);
#undef GPUSCOPE_COUNTER
  render_health(out, in, labels);

  header(out, {"gpuscope_metric_supported", "gauge",
               "1 if the metric was measured on this GPU in the latest sample, 0 if unsupported or unreadable."});
  for (size_t i = 0; i < in.devices->size() && i < snap.devices.size(); ++i) {
    for (const nvml::SampleField& f : nvml::device_sample_fields()) {
      value_line(out, "gpuscope_metric_supported", labels[i] + fmt::format(",metric=\"{}\"", f.name),
                 f.get(snap.devices[i]) ? 1 : 0);
    }
  }

  if (in.signals) {
    header(out, {"gpuscope_waste_signal", "gauge",
                 "1 while the waste signal holds on this GPU (thresholds: gpuscope serve --help); see "
                 "gpuscope_process_info for who."});
    for (size_t i = 0; i < in.devices->size(); ++i) {
      const DeviceInfo& d = (*in.devices)[i];
      for (SignalKind kind : kAllSignalKinds) {
        bool on = false;
        for (const Signal& s : *in.signals) {
          on |= s.kind == kind && s.device == d.index && s.gpu_instance_id == d.gpu_instance_id;
        }
        value_line(out, "gpuscope_waste_signal", labels[i] + fmt::format(",signal=\"{}\"", signal_name(kind)),
                   on ? 1 : 0);
      }
    }
  }

  // Processes: keyed by GPU and pid; identity only on the info series, pod labels on all.
  auto process_labels = [&](const ProcessSample& p) {
    const k8s::ProcessRef ref{gpu_uuid(p.device), p.pod_uid};
    return fmt::format("gpu=\"{}\",uuid=\"{}\",pid=\"{}\"", p.device, escape_label_value(ref.gpu_uuid), p.pid) +
           pod_labels(pods.for_process(ref));
  };
  if (!snap.processes.empty()) {
    header(out, {"gpuscope_process_info", "gauge", "A process using the GPU, with its identity from /proc; always 1."});
    for (const ProcessSample& p : snap.processes) {
      value_line(out, "gpuscope_process_info",
                 process_labels(p) + fmt::format(",command=\"{}\",user=\"{}\",pod_uid=\"{}\",slurm_job_id=\"{}\"",
                                                 escape_label_value(p.command), escape_label_value(p.user),
                                                 escape_label_value(p.pod_uid), escape_label_value(p.slurm_job_id)),
                 1);
    }
    bool any = false;
    for (const ProcessSample& p : snap.processes) {
      if (!p.memory_used_bytes) continue;
      if (!any) header(out, {"gpuscope_process_memory_used_bytes", "gauge", "Device memory held by the process."});
      any = true;
      value_line(out, "gpuscope_process_memory_used_bytes", process_labels(p),
                 static_cast<double>(*p.memory_used_bytes));
    }
    any = false;
    for (const ProcessSample& p : snap.processes) {
      if (!p.sm_util_pct) continue;
      if (!any) {
        header(out, {"gpuscope_process_sm_utilization_ratio", "gauge",
                     "NVML per-process SM utilization: share of time a kernel of this process ran."});
      }
      any = true;
      value_line(out, "gpuscope_process_sm_utilization_ratio", process_labels(p), *p.sm_util_pct / 100);
    }
  }

  if (options.dcgm_compat) {
    std::vector<std::string> dl;
    for (const DeviceInfo& d : *in.devices) {
      dl.push_back(dcgm_labels(d, options.hostname, in.driver_version) + pod_labels(pods.for_device(d.uuid)));
    }
    constexpr double kMiB = 1.0 / (1024.0 * 1024.0);
#define GPUSCOPE_DCGM(name, type, help, expr) \
  device_family(out, {name, type, help}, in, dl, [&](S s, C) { return expr; })
    GPUSCOPE_DCGM("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", opt(s.gpu_util_pct));
    GPUSCOPE_DCGM("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", opt(s.mem_util_pct));
    GPUSCOPE_DCGM("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", opt(s.memory_used_bytes, kMiB));
    GPUSCOPE_DCGM(
        "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
        (s.memory_used_bytes && s.memory_total_bytes)
            ? std::optional<double>(
                  (static_cast<double>(*s.memory_total_bytes) - static_cast<double>(*s.memory_used_bytes)) * kMiB)
            : std::nullopt);
    GPUSCOPE_DCGM("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", opt(s.power_w));
    // Types as dcgm-exporter's etc/default-counters.csv declares them: counters without the
    // _total suffix (promtool notes that; dashboards built on dcgm-exporter expect these names).
    GPUSCOPE_DCGM("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).",
                  opt(s.energy_j, 1000.0));
    GPUSCOPE_DCGM("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
                  "Ratio of time the graphics engine is active (from NVML utilization.gpu: time any kernel ran).",
                  opt(s.gpu_util_pct, 0.01));
    GPUSCOPE_DCGM("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", opt(s.sm_clock_mhz));
    GPUSCOPE_DCGM("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", opt(s.mem_clock_mhz));
    GPUSCOPE_DCGM("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", opt(s.temperature_c));
    GPUSCOPE_DCGM("DCGM_FI_PROF_SM_ACTIVE", "gauge",
                  "The ratio of cycles an SM has at least 1 warp assigned (from NVML GPM).",
                  opt(s.sm_active_pct, 0.01));
    GPUSCOPE_DCGM("DCGM_FI_PROF_SM_OCCUPANCY", "gauge",
                  "The ratio of number of warps resident on an SM (from NVML GPM).", opt(s.sm_occupancy_pct, 0.01));
    GPUSCOPE_DCGM("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
                  "Ratio of cycles the tensor (HMMA) pipe is active (from NVML GPM, any tensor).",
                  opt(s.tensor_active_pct, 0.01));
    GPUSCOPE_DCGM("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
                  "Ratio of cycles the device memory interface is active sending or receiving data (from NVML GPM).",
                  opt(s.dram_bw_pct, 0.01));
    GPUSCOPE_DCGM("DCGM_FI_PROF_PIPE_FP64_ACTIVE", "gauge", "Ratio of cycles the fp64 pipes are active.",
                  opt(s.fp64_pct, 0.01));
    GPUSCOPE_DCGM("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "gauge", "Ratio of cycles the fp32 pipes are active.",
                  opt(s.fp32_pct, 0.01));
    GPUSCOPE_DCGM("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "gauge", "Ratio of cycles the fp16 pipes are active.",
                  opt(s.fp16_pct, 0.01));
    GPUSCOPE_DCGM("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus (bytes/s).",
                  opt(s.pcie_tx_bytes_per_s));
    GPUSCOPE_DCGM("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus (bytes/s).",
                  opt(s.pcie_rx_bytes_per_s));
    GPUSCOPE_DCGM("DCGM_FI_PROF_NVLINK_TX_BYTES", "gauge", "The rate of data transmitted over NVLink (bytes/s).",
                  opt(s.nvlink_tx_bytes_per_s));
    GPUSCOPE_DCGM("DCGM_FI_PROF_NVLINK_RX_BYTES", "gauge", "The rate of data received over NVLink (bytes/s).",
                  opt(s.nvlink_rx_bytes_per_s));
#undef GPUSCOPE_DCGM
    render_health_dcgm(out, in, dl);
  }
  return out;
}

}  // namespace gpuscope::exporter
