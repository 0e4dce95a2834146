// Prometheus text exposition (format 0.0.4) of the live sampler's latest snapshot.
//
// Contract:
// - Every family has HELP and TYPE lines and appears once.
// - Device series carry labels gpu (NVML index), uuid, model; MIG instances add
//   gpu_instance. An absent (unmeasured) metric has no series: never a 0.
// - With pod-resources assignments (k8s/pod_assignments.h), a GPU that one Kubernetes
//   container holds adds pod, namespace, container to its series (dcgm-exporter's names);
//   each process series adds them too when the process's pod is known. Absent otherwise.
// - Ratios are 0..1 (`_ratio`), bytes, watts, hertz, joules, seconds: Prometheus base units.
// - Process identity (command, user, pod UID, job) is only on gpuscope_process_info, so that the
//   value series stay bounded by GPUs x processes, not by every label combination.
// - With dcgm_compat, the dcgm-exporter names and units are emitted too (DCGM_FI_DEV_GPU_UTIL
//   in percent, DCGM_FI_PROF_SM_ACTIVE as a ratio, FB memory in MiB, ...) with its labels
//   (gpu, UUID, pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION), so that
//   existing dashboards work.
// - Health families (XID, ECC, remapped rows, PCIe replays, NVLink, power limit, named
//   clocks-event reasons) are written by prometheus_health.h, in both name sets.
#pragma once

#include <string>
#include <vector>

#include "core/signals.h"
#include "k8s/pod_assignments.h"
#include "nvml/sampler.h"

namespace gpuscope::exporter {

struct ExpositionOptions {
  bool dcgm_compat = false;
  std::string hostname;  // For the DCGM Hostname label.
};

struct ExpositionInput {
  const std::vector<nvml::DeviceInfo>* devices = nullptr;
  const nvml::LiveSnapshot* snapshot = nullptr;  // Null before the first sample.
  const std::vector<Signal>* signals = nullptr;
  std::string driver_version;
  const k8s::PodAssignments* pods = nullptr;  // Null: no Kubernetes labels.
};

std::string render_prometheus(const ExpositionInput& input, const ExpositionOptions& options);

// A label value: invalid UTF-8 replaced by U+FFFD, then backslash, double quote and newline
// escaped (exposition format 0.0.4).
std::string escape_label_value(std::string_view v);

}  // namespace gpuscope::exporter
