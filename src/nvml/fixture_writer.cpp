#include "nvml/fixture_writer.h"

#include <algorithm>
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

std::string fixture_health_fields(const DeviceHealth& h, int32_t nvlinks) {
  std::string out;
  add_int(out, "ecc_vol_corr", h.ecc_volatile_corrected);
  add_int(out, "ecc_vol_unc", h.ecc_volatile_uncorrected);
  add_int(out, "ecc_agg_corr", h.ecc_aggregate_corrected);
  add_int(out, "ecc_agg_unc", h.ecc_aggregate_uncorrected);
  if (h.remapped_rows_corrected) {
    add_int(out, "remap_corr", h.remapped_rows_corrected);
    add_int(out, "remap_unc", h.remapped_rows_uncorrected);
    out += fmt::format(" remap_pending={} remap_failure={}", h.remap_pending.value_or(false) ? 1 : 0,
                       h.remap_failure.value_or(false) ? 1 : 0);
  }
  add_int(out, "pcie_replay", h.pcie_replays);
  add_int(out, "power_limit_mw", h.power_limit_w, 1000.0);
  for (int32_t link = 0; link < nvlinks; ++link) {
    auto it =
        std::find_if(h.nvlink.begin(), h.nvlink.end(), [&](const NvlinkErrorCounters& l) { return l.link == link; });
    const std::string k = fmt::format("nvlink{}_", link);
    if (it == h.nvlink.end()) {
      out += " " + k + "up=0";
      continue;
    }
    add_int(out, (k + "replay").c_str(), it->replay);
    add_int(out, (k + "recovery").c_str(), it->recovery);
    add_int(out, (k + "crc_flit").c_str(), it->crc_flit);
    add_int(out, (k + "crc_data").c_str(), it->crc_data);
  }
  return out;
}

namespace {
// Links declared for a device: up to the highest link that was up in the first frame.
int32_t nvlink_count(const DeviceHealth& h) {
  int32_t n = 0;
  for (const NvlinkErrorCounters& l : h.nvlink) n = std::max(n, l.link + 1);
  return n;
}
}  // namespace

StatusOr<std::unique_ptr<FixtureWriter>> FixtureWriter::create(const std::string& path, const Sampler& sampler,
                                                               const std::string& comment) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    return Status::error(fmt::format("cannot write fixture {}: {}; check the directory exists and is writable", path,
                                     std::strerror(errno)));
  }
  std::unique_ptr<FixtureWriter> w(new FixtureWriter());
  w->f_ = f;
  w->path_ = path;
  fmt::print(f, "# gpuscope NVML fixture v1 (format: src/nvml/fake_nvml.cpp)\n");
  if (!comment.empty()) fmt::print(f, "# {}\n", comment);
  fmt::print(f, "driver {}\n", sampler.driver_version().empty() ? "unknown" : sampler.driver_version());
  w->devices_ = sampler.devices();
  w->xids_written_.resize(w->devices_.size());
  w->nvlinks_.resize(w->devices_.size());
  return w;
}

void FixtureWriter::write_devices(const LiveSnapshot& snap) {
  std::vector<int> mig_count;
  for (const DeviceInfo& d : devices_) {
    if (d.gpu_instance_id) {
      if (!mig_count.empty()) ++mig_count.back();
      continue;
    }
    mig_count.push_back(0);
  }
  size_t k = 0;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const DeviceInfo& d = devices_[i];
    if (d.gpu_instance_id) continue;
    const int32_t links = i < snap.health.size() ? nvlink_count(snap.health[i]) : 0;
    nvlinks_[i] = links;
    fmt::print(f_, "device {} uuid={} gpm={} mig={}{}{} name={}\n", d.index, d.uuid.empty() ? "unknown" : d.uuid,
               d.gpm_supported ? 1 : 0, mig_count[k++], d.xid_events ? "" : " events=0",
               links ? fmt::format(" nvlinks={}", links) : "", d.name);
  }
  devices_written_ = true;
}

FixtureWriter::~FixtureWriter() {
  if (f_) std::fclose(f_);
}

Status FixtureWriter::write_frame(const LiveSnapshot& snap) {
  if (!devices_written_) write_devices(snap);
  fmt::print(f_, "frame\n");
  for (size_t i = 0; i < snap.devices.size(); ++i) {
    const DeviceSample& s = snap.devices[i];
    if (s.gpu_instance_id) continue;
    std::string health;
    if (i < snap.health.size()) {
      const DeviceHealth& h = snap.health[i];
      health = fixture_health_fields(h, i < nvlinks_.size() ? nvlinks_[i] : 0);
      // XIDs first seen in this frame (counts only grow while the sampler runs), by code; the
      // order within a frame is not kept, except that the last one seen is written last.
      if (i < xids_written_.size()) {
        std::vector<uint32_t> fresh;
        for (const XidCount& c : h.xid_counts) {
          uint64_t before = 0;
          for (const XidCount& w : xids_written_[i]) before = w.xid == c.xid ? w.count : before;
          for (uint64_t n = before; n < c.count; ++n) fresh.push_back(c.xid);
        }
        auto last = std::find(fresh.begin(), fresh.end(), h.last_xid.value_or(0));
        if (last != fresh.end()) std::rotate(last, last + 1, fresh.end());
        for (uint32_t xid : fresh) health += fmt::format("\nx {} {}", s.device, xid);
        xids_written_[i] = h.xid_counts;
      }
    }
    fmt::print(f_, "s {}{}{}\n", s.device, fixture_sample_fields(s), health);
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
