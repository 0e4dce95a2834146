#include "core/signals.h"

#include <cstdio>

namespace gpuscope {

namespace {

std::string format_pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", v);
  return buf;
}

std::string format_gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

// The process with the most GPU memory on (device), if any.
std::optional<ProcessSample> main_process(std::span<const ProcessSample> processes, int32_t device) {
  const ProcessSample* best = nullptr;
  for (const ProcessSample& p : processes) {
    if (p.device != device) continue;
    if (!best || p.memory_used_bytes.value_or(0) > best->memory_used_bytes.value_or(0)) best = &p;
  }
  if (!best) return std::nullopt;
  return *best;
}

}  // namespace

std::string_view signal_name(SignalKind kind) {
  switch (kind) {
    case SignalKind::kIdleHoldingMemory:
      return "idle_holding_memory";
    case SignalKind::kBusyNotWorking:
      return "busy_not_working";
    case SignalKind::kTensorCoresUnused:
      return "tensor_cores_unused";
    case SignalKind::kMemoryBandwidthBound:
      return "memory_bandwidth_bound";
  }
  return "unknown";
}

std::vector<Signal> SignalTracker::update(std::span<const DeviceSample> devices,
                                          std::span<const ProcessSample> processes) {
  std::map<Key, int64_t> next;
  std::vector<Signal> active;
  // Records that `key` holds at `now`; emits a signal once it has held for `after_ns`.
  auto hold = [&](const Key& key, int64_t now, int64_t after_ns, Signal signal) {
    auto it = since_.find(key);
    int64_t since = it == since_.end() ? now : it->second;
    next[key] = since;
    if (now - since >= after_ns) {
      signal.since_ns = since;
      active.push_back(std::move(signal));
    }
  };

  for (const DeviceSample& s : devices) {
    const int32_t gi = s.gpu_instance_id.value_or(-1);
    const int64_t now = s.time_ns;
    auto base = [&](SignalKind kind) {
      Signal sig;
      sig.kind = kind;
      sig.device = s.device;
      sig.gpu_instance_id = s.gpu_instance_id;
      return sig;
    };
    // A device-wide signal, attributed to the GPU's main process, once it holds signal_after_ns.
    auto device_signal = [&](SignalKind kind, std::string evidence) {
      Signal sig = base(kind);
      sig.process = main_process(processes, s.device);
      sig.evidence = std::move(evidence);
      hold({kind, s.device, gi, 0}, now, t_.signal_after_ns, std::move(sig));
    };

    // Idle while holding memory: per process; whole GPUs only (NVML's process list is per GPU).
    std::optional<double> activity = s.sm_active_pct ? s.sm_active_pct : s.gpu_util_pct;
    if (!s.gpu_instance_id && activity && *activity < t_.idle_sm_active_pct) {
      for (const ProcessSample& p : processes) {
        if (p.device != s.device || !p.memory_used_bytes ||
            static_cast<double>(*p.memory_used_bytes) < t_.idle_memory_bytes) {
          continue;
        }
        Signal sig = base(SignalKind::kIdleHoldingMemory);
        sig.process = p;
        sig.evidence = "holds " + format_gib(static_cast<double>(*p.memory_used_bytes)) +
                       (s.sm_active_pct ? ", SM active " : ", utilization ") + format_pct(*activity);
        hold({SignalKind::kIdleHoldingMemory, s.device, gi, p.pid}, now, t_.idle_after_ns, std::move(sig));
      }
    }

    if (s.gpu_util_pct && s.sm_active_pct && *s.gpu_util_pct >= t_.busy_util_pct &&
        *s.sm_active_pct < t_.busy_sm_active_pct) {
      // The two usual causes, which a trace tells apart (docs/live.md): kernels too small for
      // the GPU because each carries few tokens (decode serving few sequences: under-batched),
      // or because the host issues many tiny kernels (launch-bound); `gpuscope run --steps 50`
      // tells which.
      device_signal(SignalKind::kBusyNotWorking, "utilization " + format_pct(*s.gpu_util_pct) + " but SM active " +
                                                     format_pct(*s.sm_active_pct) +
                                                     " (small kernels: under-batched or launch-bound)");
    }

    if (s.sm_active_pct && s.tensor_active_pct && *s.sm_active_pct >= t_.tensor_sm_active_pct &&
        *s.tensor_active_pct < t_.tensor_active_pct && !(s.dram_bw_pct && *s.dram_bw_pct >= t_.membw_dram_pct)) {
      device_signal(SignalKind::kTensorCoresUnused, "SM active " + format_pct(*s.sm_active_pct) + ", tensor active " +
                                                        format_pct(*s.tensor_active_pct));
    }

    if (s.dram_bw_pct && s.sm_active_pct && *s.dram_bw_pct >= t_.membw_dram_pct &&
        *s.sm_active_pct >= t_.membw_sm_active_pct) {
      device_signal(SignalKind::kMemoryBandwidthBound,
                    "DRAM bandwidth " + format_pct(*s.dram_bw_pct) + ", SM active " + format_pct(*s.sm_active_pct));
    }
  }
  since_ = std::move(next);
  return active;
}

}  // namespace gpuscope
