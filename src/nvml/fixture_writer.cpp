#include "nvml/fixture_writer.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/core.h>

namespace gpuscope::nvml {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;

void add(std::string& out, const char* key, const std::optional<double>& v, double scale = 1.0) {
  if (!v) return;
  out += fmt::format(" {}={:.6g}", key, *v * scale);
}
template <typename T>
void add_int(std::string& out, const char* key, const std::optional<T>& v, double scale = 1.0) {
  if (!v) return;
  out += fmt::format(" {}={}", key, static_cast<unsigned long long>(std::llround(static_cast<double>(*v) * scale)));
}
}  // namespace

std::string fixture_sample_fields(const DeviceSample& s) {
  std::string out;
  add_int(out, "gpu_util", s.gpu_util_pct);
  add_int(out, "mem_util", s.mem_util_pct);
  add_int(out, "mem_used", s.memory_used_bytes);
  add_int(out, "mem_total", s.memory_total_bytes);
  add_int(out, "power_mw", s.power_w, 1000.0);
  add_int(out, "energy_mj", s.energy_j, 1000.0);
  add_int(out, "sm_clock", s.sm_clock_mhz);
  add_int(out, "mem_clock", s.mem_clock_mhz);
  add_int(out, "temp", s.temperature_c);
  add_int(out, "throttle", s.throttle_reasons);
  // PCIe: from GPM when present (MiB/s), else NVML's KB/s counter.
  if (s.sm_active_pct) {
    add(out, "gpm20", s.pcie_tx_bytes_per_s, 1.0 / kMiB);
    add(out, "gpm21", s.pcie_rx_bytes_per_s, 1.0 / kMiB);
  } else {
    add_int(out, "pcie_tx_kbs", s.pcie_tx_bytes_per_s, 1.0 / 1024.0);
    add_int(out, "pcie_rx_kbs", s.pcie_rx_bytes_per_s, 1.0 / 1024.0);
  }
  add(out, "gpm2", s.sm_active_pct);
  add(out, "gpm3", s.sm_occupancy_pct);
  add(out, "gpm5", s.tensor_active_pct);
  add(out, "gpm7", s.tensor_hmma_pct);
  add(out, "gpm9", s.tensor_imma_pct);
  add(out, "gpm6", s.tensor_dfma_pct);
  add(out, "gpm10", s.dram_bw_pct);
  add(out, "gpm11", s.fp64_pct);
  add(out, "gpm12", s.fp32_pct);
  add(out, "gpm13", s.fp16_pct);
  add(out, "gpm60", s.nvlink_rx_bytes_per_s, 1.0 / kMiB);
  add(out, "gpm61", s.nvlink_tx_bytes_per_s, 1.0 / kMiB);
  return out;
}

StatusOr<std::unique_ptr<FixtureWriter>> FixtureWriter::create(const std::string& path,
                                                               const Sampler& sampler,
                                                               const std::string& comment) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    return Status::error(fmt::format("cannot write fixture {}: {}; check the directory exists and is writable",
                                     path, std::strerror(errno)));
  }
  std::unique_ptr<FixtureWriter> w(new FixtureWriter());
  w->f_ = f;
  w->path_ = path;
  fmt::print(f, "# gpuscope NVML fixture v1 (format: src/nvml/fake_nvml.cpp)\n");
  if (!comment.empty()) fmt::print(f, "# {}\n", comment);
  fmt::print(f, "driver {}\n", sampler.driver_version().empty() ? "unknown" : sampler.driver_version());
  std::vector<int> mig_count;
  for (const DeviceInfo& d : sampler.devices()) {
    if (d.gpu_instance_id) {
      if (!mig_count.empty()) ++mig_count.back();
      continue;
    }
    mig_count.push_back(0);
  }
  size_t k = 0;
  for (const DeviceInfo& d : sampler.devices()) {
    if (d.gpu_instance_id) continue;
    fmt::print(f, "device {} uuid={} gpm={} mig={} name={}\n", d.index,
               d.uuid.empty() ? "unknown" : d.uuid, d.gpm_supported ? 1 : 0, mig_count[k++], d.name);
  }
  return w;
}

FixtureWriter::~FixtureWriter() {
  if (f_) std::fclose(f_);
}

Status FixtureWriter::write_frame(const LiveSnapshot& snap) {
  fmt::print(f_, "frame\n");
  for (const DeviceSample& s : snap.devices) {
    if (s.gpu_instance_id) continue;
    fmt::print(f_, "s {}{}\n", s.device, fixture_sample_fields(s));
  }
  for (const ProcessSample& p : snap.processes) {
    std::string line = fmt::format("p {} pid={}", p.device, p.pid);
    if (p.memory_used_bytes) line += fmt::format(" used={}", *p.memory_used_bytes);
    if (p.sm_util_pct) line += fmt::format(" sm={:.0f}", *p.sm_util_pct);
    if (p.mem_util_pct) line += fmt::format(" mem={:.0f}", *p.mem_util_pct);
    fmt::print(f_, "{}\n", line);
  }
  if (std::fflush(f_) != 0) {
    return Status::error(fmt::format("cannot write fixture {}: {}", path_, std::strerror(errno)));
  }
  return ok_status();
}

}  // namespace gpuscope::nvml
