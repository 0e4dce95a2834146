#include "nvml/sampler.h"

#include <time.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

#include <fmt/core.h>

#include "core/clock.h"

namespace gpuscope::nvml {

namespace {

// GPM requires at least 100 ms between the two samples of a metrics query.
constexpr int64_t kGpmMinIntervalNs = 100'000'000;
constexpr int64_t kGpmMaxWaitNs = 15'000'000;
constexpr double kMiB = 1024.0 * 1024.0;

// The GPM metrics gpuscope reads, and where each lands in a DeviceSample.
struct GpmMetricSlot {
  unsigned int id;
  std::optional<double> DeviceSample::*field;
  double scale;  // GPM unit -> DeviceSample unit.
};
constexpr GpmMetricSlot kGpmMetrics[] = {
    {NVML_GPM_METRIC_SM_UTIL, &DeviceSample::sm_active_pct, 1.0},
    {NVML_GPM_METRIC_SM_OCCUPANCY, &DeviceSample::sm_occupancy_pct, 1.0},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, &DeviceSample::tensor_active_pct, 1.0},
    {NVML_GPM_METRIC_HMMA_TENSOR_UTIL, &DeviceSample::tensor_hmma_pct, 1.0},
    {NVML_GPM_METRIC_IMMA_TENSOR_UTIL, &DeviceSample::tensor_imma_pct, 1.0},
    {NVML_GPM_METRIC_DFMA_TENSOR_UTIL, &DeviceSample::tensor_dfma_pct, 1.0},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, &DeviceSample::dram_bw_pct, 1.0},
    {NVML_GPM_METRIC_FP64_UTIL, &DeviceSample::fp64_pct, 1.0},
    {NVML_GPM_METRIC_FP32_UTIL, &DeviceSample::fp32_pct, 1.0},
    {NVML_GPM_METRIC_FP16_UTIL, &DeviceSample::fp16_pct, 1.0},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, &DeviceSample::pcie_tx_bytes_per_s, kMiB},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, &DeviceSample::pcie_rx_bytes_per_s, kMiB},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, &DeviceSample::nvlink_rx_bytes_per_s, kMiB},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, &DeviceSample::nvlink_tx_bytes_per_s, kMiB},
};

void accumulate(std::optional<double>& counter, const std::optional<double>& pct, double interval_s) {
  if (!pct) return;
  counter = counter.value_or(0.0) + std::clamp(*pct, 0.0, 100.0) / 100.0 * interval_s;
}

}  // namespace

struct Sampler::DeviceState {
  int32_t index = 0;
  nvmlDevice_t handle = nullptr;  // The GPU (the parent GPU for a MIG instance).
  std::optional<unsigned int> gpu_instance_id;
  bool gpm = false;
  nvmlGpmSample_t gpm_prev = nullptr;
  nvmlGpmSample_t gpm_cur = nullptr;
  int64_t gpm_prev_mono_ns = 0;
  bool gpm_prev_valid = false;
  std::optional<double> energy_j;   // Last hardware reading of total energy.
  int64_t energy_read_mono_ns = 0;  // When it was read (CLOCK_MONOTONIC).
  std::string label;                // "GPU 0" or "GPU 0 MIG 1", for messages.
};

// nvmlDeviceGetTotalEnergyConsumption cost 3.9 ms of CPU per call on the H200 (driver
// 580.159.04, scripts/nvml-call-cost.py), 40 times all other per-sample calls together, so
// the energy counter is read at most this often and held in between. Rates of the counter
// over windows of a minute or more (Prometheus rate()) stay exact.
constexpr int64_t kEnergyReadIntervalNs = 30'000'000'000;

StatusOr<std::unique_ptr<Sampler>> Sampler::open(const SamplerOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<NvmlApi> api, NvmlApi::load());
  return open(std::move(api), options);
}

StatusOr<std::unique_ptr<Sampler>> Sampler::open(std::unique_ptr<NvmlApi> api, const SamplerOptions& options) {
  std::unique_ptr<Sampler> s(new Sampler());
  s->api_ = std::move(api);
  s->options_ = options;
  s->identities_ = ProcessIdentityCache(options.proc_root);
  NvmlApi& nv = *s->api_;

  char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (NvmlApi::call(nv.system_get_driver_version, driver, sizeof driver) == NVML_SUCCESS) {
    s->driver_version_ = driver;
  }

  unsigned int count = 0;
  RETURN_IF_ERROR(nv.check(NvmlApi::call(nv.device_get_count, &count), "nvmlDeviceGetCount"));
  if (count == 0) {
    return Status::error(fmt::format("no NVIDIA GPU found (NVML at {} reports 0 devices)", nv.library_path()));
  }

  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t handle = nullptr;
    RETURN_IF_ERROR(nv.check(NvmlApi::call(nv.device_get_handle_by_index, i, &handle), "nvmlDeviceGetHandleByIndex"));
    DeviceInfo info;
    info.index = static_cast<int32_t>(i);
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (NvmlApi::call(nv.device_get_name, handle, buf, sizeof buf) == NVML_SUCCESS) {
      info.name = buf;
    }
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (NvmlApi::call(nv.device_get_uuid, handle, uuid, sizeof uuid) == NVML_SUCCESS) {
      info.uuid = uuid;
    }
    nvmlPciInfo_t pci{};
    if (NvmlApi::call(nv.device_get_pci_info, handle, &pci) == NVML_SUCCESS) {
      pci.busId[sizeof pci.busId - 1] = '\0';
      info.pci_bus_id = pci.busId;
    }
    nvmlGpmSupport_t support{};
    support.version = NVML_GPM_SUPPORT_VERSION;  // Plain 1, not NVML_STRUCT_VERSION.
    info.gpm_supported = nv.gpm_sample_alloc && nv.gpm_sample_get && nv.gpm_metrics_get &&
                         NvmlApi::call(nv.gpm_query_device_support, handle, &support) == NVML_SUCCESS &&
                         support.isSupportedDevice != 0;

    auto state = std::make_unique<DeviceState>();
    state->index = info.index;
    state->handle = handle;
    state->gpm = info.gpm_supported;
    state->label = fmt::format("GPU {}", i);
    s->devices_.push_back(info);
    s->states_.push_back(std::move(state));

    // MIG: one extra entry per GPU instance, read through nvmlGpmMigSampleGet.
    unsigned int current = 0, pending = 0;
    if (info.gpm_supported && nv.gpm_mig_sample_get &&
        NvmlApi::call(nv.device_get_mig_mode, handle, &current, &pending) == NVML_SUCCESS &&
        current == NVML_DEVICE_MIG_ENABLE) {
      unsigned int max_mig = 0;
      NvmlApi::call(nv.device_get_max_mig_device_count, handle, &max_mig);
      for (unsigned int m = 0; m < max_mig; ++m) {
        nvmlDevice_t mig = nullptr;
        unsigned int gi = 0;
        if (NvmlApi::call(nv.device_get_mig_device_handle_by_index, handle, m, &mig) != NVML_SUCCESS ||
            NvmlApi::call(nv.device_get_gpu_instance_id, mig, &gi) != NVML_SUCCESS) {
          continue;
        }
        DeviceInfo mi = info;
        mi.gpu_instance_id = static_cast<int32_t>(gi);
        char mig_uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
        if (NvmlApi::call(nv.device_get_uuid, mig, mig_uuid, sizeof mig_uuid) == NVML_SUCCESS) {
          mi.uuid = mig_uuid;
        }
        auto ms = std::make_unique<DeviceState>();
        ms->index = info.index;
        ms->handle = handle;
        ms->gpu_instance_id = gi;
        ms->gpm = true;
        ms->label = fmt::format("GPU {} MIG {}", i, gi);
        s->devices_.push_back(mi);
        s->states_.push_back(std::move(ms));
      }
    }
  }

  for (auto& d : s->states_) {
    if (!d->gpm) continue;
    if (NvmlApi::call(nv.gpm_sample_alloc, &d->gpm_prev) != NVML_SUCCESS ||
        NvmlApi::call(nv.gpm_sample_alloc, &d->gpm_cur) != NVML_SUCCESS) {
      d->gpm = false;
      continue;
    }
  }
  s->counters_.resize(s->devices_.size());
  std::vector<HealthCollector::Device> health_devices;
  for (auto& d : s->states_) {
    health_devices.push_back({d->index, d->gpu_instance_id ? nullptr : d->handle, d->label});
  }
  Sampler* self = s.get();
  s->health_ =
      std::make_unique<HealthCollector>(nv, std::move(health_devices), options.health_interval_ns,
                                        [self](nvmlReturn_t rc, const char* function, const std::string& label) {
                                          return self->ok(rc, function, label);
                                        });
  for (size_t i = 0; i < s->devices_.size(); ++i) s->devices_[i].xid_events = s->health_->xid_supported(i);
  s->gpm_request_ = std::make_unique<nvmlGpmMetricsGet_t>();
  s->last_mono_ns_ = clock_ns(CLOCK_MONOTONIC);
  s->last_realtime_ns_ = clock_ns(CLOCK_REALTIME);
  // First GPM samples, so that the first sample() has an interval to report.
  for (auto& d : s->states_) {
    if (!d->gpm) continue;
    nvmlReturn_t rc = d->gpu_instance_id
                          ? NvmlApi::call(nv.gpm_mig_sample_get, d->handle, *d->gpu_instance_id, d->gpm_prev)
                          : NvmlApi::call(nv.gpm_sample_get, d->handle, d->gpm_prev);
    d->gpm_prev_valid = s->ok(rc, "nvmlGpmSampleGet", *d);
    d->gpm_prev_mono_ns = clock_ns(CLOCK_MONOTONIC);
  }
  return s;
}

Sampler::~Sampler() {
  if (!api_) return;
  for (auto& d : states_) {
    if (d->gpm_prev) NvmlApi::call(api_->gpm_sample_free, d->gpm_prev);
    if (d->gpm_cur) NvmlApi::call(api_->gpm_sample_free, d->gpm_cur);
  }
}

bool Sampler::ok(nvmlReturn_t rc, const char* function, const DeviceState& d) { return ok(rc, function, d.label); }

bool Sampler::ok(nvmlReturn_t rc, const char* function, const std::string& label) {
  if (rc == NVML_SUCCESS) return true;
  if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND) return false;
  std::string key = fmt::format("{}/{}/{}", function, label, rc);
  if (warned_.insert(key).second) {
    warnings_.push_back(fmt::format("{} on {}", api_->check(rc, function).message(), label));
  }
  return false;
}

std::vector<std::string> Sampler::take_warnings() { return std::exchange(warnings_, {}); }

void Sampler::read_classic(DeviceState& d, DeviceSample& s) {
  NvmlApi& nv = *api_;
  nvmlUtilization_t util{};
  if (ok(NvmlApi::call(nv.device_get_utilization_rates, d.handle, &util), "nvmlDeviceGetUtilizationRates", d)) {
    s.gpu_util_pct = util.gpu;
    s.mem_util_pct = util.memory;
  }
  nvmlMemory_v2_t mem2{};
  mem2.version = nvmlMemory_v2;
  if (nv.device_get_memory_info_v2 &&
      ok(nv.device_get_memory_info_v2(d.handle, &mem2), "nvmlDeviceGetMemoryInfo_v2", d)) {
    s.memory_used_bytes = mem2.used;
    s.memory_total_bytes = mem2.total;
  } else {
    nvmlMemory_t mem{};
    if (ok(NvmlApi::call(nv.device_get_memory_info, d.handle, &mem), "nvmlDeviceGetMemoryInfo", d)) {
      s.memory_used_bytes = mem.used;
      s.memory_total_bytes = mem.total;
    }
  }
  unsigned int mw = 0;
  if (ok(NvmlApi::call(nv.device_get_power_usage, d.handle, &mw), "nvmlDeviceGetPowerUsage", d)) {
    s.power_w = mw / 1000.0;
  }
  const int64_t now_mono = clock_ns(CLOCK_MONOTONIC);
  if (!d.energy_j || now_mono - d.energy_read_mono_ns >= kEnergyReadIntervalNs) {
    unsigned long long mj = 0;
    if (ok(NvmlApi::call(nv.device_get_total_energy_consumption, d.handle, &mj), "nvmlDeviceGetTotalEnergyConsumption",
           d)) {
      d.energy_j = static_cast<double>(mj) / 1000.0;
      d.energy_read_mono_ns = now_mono;
    }
  }
  s.energy_j = d.energy_j;
  unsigned int mhz = 0;
  if (ok(NvmlApi::call(nv.device_get_clock_info, d.handle, +NVML_CLOCK_SM, &mhz), "nvmlDeviceGetClockInfo", d)) {
    s.sm_clock_mhz = mhz;
  }
  if (ok(NvmlApi::call(nv.device_get_clock_info, d.handle, +NVML_CLOCK_MEM, &mhz), "nvmlDeviceGetClockInfo", d)) {
    s.mem_clock_mhz = mhz;
  }
  unsigned int temp = 0;
  if (ok(NvmlApi::call(nv.device_get_temperature, d.handle, +NVML_TEMPERATURE_GPU, &temp), "nvmlDeviceGetTemperature",
         d)) {
    s.temperature_c = temp;
  }
  unsigned long long reasons = 0;
  if (ok(NvmlApi::call(nv.device_get_clocks_event_reasons, d.handle, &reasons),
         "nvmlDeviceGetCurrentClocksEventReasons", d)) {
    s.throttle_reasons = reasons;
  }
}

void Sampler::read_gpm(DeviceState& d, DeviceSample& s, int64_t now_mono_ns) {
  NvmlApi& nv = *api_;
  if (!d.gpm) return;
  if (d.gpm_prev_valid && now_mono_ns - d.gpm_prev_mono_ns < kGpmMinIntervalNs) {
    // At --interval 100ms the schedule's jitter would skip about every other GPM reading;
    // a pass that is at most kGpmMaxWaitNs early waits for the 100 ms instead.
    const int64_t short_by = kGpmMinIntervalNs - (now_mono_ns - d.gpm_prev_mono_ns);
    if (short_by > kGpmMaxWaitNs) return;
    timespec ts{0, static_cast<long>(short_by + 200'000)};
    nanosleep(&ts, nullptr);
  }
  nvmlReturn_t rc = d.gpu_instance_id ? NvmlApi::call(nv.gpm_mig_sample_get, d.handle, *d.gpu_instance_id, d.gpm_cur)
                                      : NvmlApi::call(nv.gpm_sample_get, d.handle, d.gpm_cur);
  int64_t cur_mono_ns = clock_ns(CLOCK_MONOTONIC);
  if (!ok(rc, d.gpu_instance_id ? "nvmlGpmMigSampleGet" : "nvmlGpmSampleGet", d)) return;
  if (d.gpm_prev_valid) {
    nvmlGpmMetricsGet_t& req = *gpm_request_;
    req.version = NVML_GPM_METRICS_GET_VERSION;  // Plain 1 (GPU.md pitfalls).
    req.numMetrics = static_cast<unsigned int>(std::size(kGpmMetrics));
    req.sample1 = d.gpm_prev;
    req.sample2 = d.gpm_cur;
    for (size_t i = 0; i < std::size(kGpmMetrics); ++i) {
      req.metrics[i] = nvmlGpmMetric_t{};
      req.metrics[i].metricId = kGpmMetrics[i].id;
    }
    if (ok(NvmlApi::call(nv.gpm_metrics_get, &req), "nvmlGpmMetricsGet", d)) {
      for (size_t i = 0; i < std::size(kGpmMetrics); ++i) {
        // Each metric has its own status; a failed one stays absent.
        if (req.metrics[i].nvmlReturn != NVML_SUCCESS) continue;
        s.*(kGpmMetrics[i].field) = req.metrics[i].value * kGpmMetrics[i].scale;
      }
    }
  }
  std::swap(d.gpm_prev, d.gpm_cur);
  d.gpm_prev_valid = true;
  d.gpm_prev_mono_ns = cur_mono_ns;
}

void Sampler::read_processes(DeviceState& d, int64_t time_ns, std::vector<ProcessSample>* out) {
  NvmlApi& nv = *api_;
  size_t first = out->size();
  std::vector<nvmlProcessInfo_t> infos(16);
  nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
  unsigned int count = 0;
  if (nv.device_get_compute_running_processes) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      count = static_cast<unsigned int>(infos.size());
      rc = nv.device_get_compute_running_processes(d.handle, &count, infos.data());
      if (rc != NVML_ERROR_INSUFFICIENT_SIZE) break;
      infos.resize(count + 8);  // Processes may start between the calls.
    }
  } else if (nv.device_get_compute_running_processes_v1) {
    std::vector<nvmlProcessInfo_v1_t> v1(16);
    for (int attempt = 0; attempt < 3; ++attempt) {
      count = static_cast<unsigned int>(v1.size());
      rc = nv.device_get_compute_running_processes_v1(d.handle, &count, v1.data());
      if (rc != NVML_ERROR_INSUFFICIENT_SIZE) break;
      v1.resize(count + 8);
    }
    infos.resize(v1.size());
    for (size_t i = 0; i < v1.size(); ++i) {
      infos[i] = nvmlProcessInfo_t{v1[i].pid, v1[i].usedGpuMemory, ~0u, ~0u};
    }
  }
  if (!ok(rc, "nvmlDeviceGetComputeRunningProcesses", d)) return;
  for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
    ProcessSample p;
    p.time_ns = time_ns;
    p.device = d.index;
    p.pid = infos[i].pid;
    if (infos[i].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE_ULL) {
      p.memory_used_bytes = infos[i].usedGpuMemory;
    }
    out->push_back(std::move(p));
  }
  if (out->size() == first) return;

  // Per-process utilization: samples newer than the previous sample time, highest per pid.
  if (nv.device_get_process_utilization) {
    unsigned long long since_us = static_cast<unsigned long long>(last_realtime_ns_ / 1000);
    unsigned int n = 0;
    rc = nv.device_get_process_utilization(d.handle, nullptr, &n, since_us);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE && n > 0) {
      std::vector<nvmlProcessUtilizationSample_t> util(n);
      rc = nv.device_get_process_utilization(d.handle, util.data(), &n, since_us);
      if (ok(rc, "nvmlDeviceGetProcessUtilization", d)) {
        std::unordered_map<unsigned int, const nvmlProcessUtilizationSample_t*> best;
        for (unsigned int i = 0; i < n && i < util.size(); ++i) {
          auto& slot = best[util[i].pid];
          if (!slot || util[i].smUtil > slot->smUtil) slot = &util[i];
        }
        for (size_t i = first; i < out->size(); ++i) {
          auto it = best.find((*out)[i].pid);
          if (it == best.end()) continue;
          (*out)[i].sm_util_pct = it->second->smUtil;
          (*out)[i].mem_util_pct = it->second->memUtil;
        }
      }
    } else if (rc != NVML_ERROR_NOT_FOUND) {  // NOT_FOUND: no samples since `since_us`.
      ok(rc, "nvmlDeviceGetProcessUtilization", d);
    }
  }
  for (size_t i = first; i < out->size(); ++i) {
    ProcessSample& p = (*out)[i];
    const ProcessIdentity& id = identities_.get(p.pid);
    p.command = id.command;
    p.user = id.user;
    p.pod_uid = id.pod_uid;
    p.slurm_job_id = id.slurm_job_id;
  }
}

Status Sampler::sample(LiveSnapshot* out) {
  out->devices.assign(states_.size(), DeviceSample{});
  out->processes.clear();
  int64_t now_mono = clock_ns(CLOCK_MONOTONIC);
  int64_t now_real = clock_ns(CLOCK_REALTIME);
  int64_t interval_ns = now_mono - last_mono_ns_;
  for (size_t i = 0; i < states_.size(); ++i) {
    DeviceState& d = *states_[i];
    DeviceSample& s = out->devices[i];
    s.device = d.index;
    if (d.gpu_instance_id) s.gpu_instance_id = static_cast<int32_t>(*d.gpu_instance_id);
    s.interval_ns = interval_ns;
    if (!d.gpu_instance_id) read_classic(d, s);
    int64_t gpm_prev = d.gpm_prev_mono_ns;
    bool had_prev = d.gpm_prev_valid;
    read_gpm(d, s, clock_ns(CLOCK_MONOTONIC));  // May wait up to 15 ms; see read_gpm.
    // PCIe from GPM when it has it; otherwise NVML's counter, which samples for ~20 ms inside
    // the call (NVML docs, nvmlDeviceGetPcieThroughput), so it is read only without GPM.
    if (!d.gpu_instance_id && !d.gpm) {
      unsigned int kbs = 0;
      if (ok(NvmlApi::call(api_->device_get_pcie_throughput, d.handle, +NVML_PCIE_UTIL_TX_BYTES, &kbs),
             "nvmlDeviceGetPcieThroughput", d)) {
        s.pcie_tx_bytes_per_s = kbs * 1024.0;
      }
      if (ok(NvmlApi::call(api_->device_get_pcie_throughput, d.handle, +NVML_PCIE_UTIL_RX_BYTES, &kbs),
             "nvmlDeviceGetPcieThroughput", d)) {
        s.pcie_rx_bytes_per_s = kbs * 1024.0;
      }
    }
    // GPM ratios cover their own sample pair; report that interval when it was read.
    if (had_prev && s.sm_active_pct) s.interval_ns = d.gpm_prev_mono_ns - gpm_prev;
    if (options_.processes && !d.gpu_instance_id) read_processes(d, now_real, &out->processes);
  }
  int64_t end_real = clock_ns(CLOCK_REALTIME);
  for (size_t i = 0; i < states_.size(); ++i) {
    DeviceSample& s = out->devices[i];
    s.time_ns = end_real;
    const double interval_s = static_cast<double>(s.interval_ns) / 1e9;
    ActiveCounters& c = counters_[i];
    accumulate(c.gpu_busy_s, s.gpu_util_pct, interval_s);
    accumulate(c.sm_active_s, s.sm_active_pct, interval_s);
    accumulate(c.tensor_active_s, s.tensor_active_pct, interval_s);
    accumulate(c.dram_active_s, s.dram_bw_pct, interval_s);
  }
  health_->sample(clock_ns(CLOCK_MONOTONIC), &out->health);
  if (options_.processes) identities_.sweep();
  out->counters = counters_;
  out->time_ns = end_real;
  last_mono_ns_ = now_mono;
  last_realtime_ns_ = now_real;
  return ok_status();
}

}  // namespace gpuscope::nvml
