#include "exporter/prometheus_health.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/core.h>

#include "core/device_health.h"
#include "exporter/exposition_text.h"

namespace gpuscope::exporter {

namespace {

// One family: its HELP and TYPE lines are written before its first series, so a family
// without any reading leaves no trace. Lines from exposition_text.h, as prometheus.cpp's.
class Family {
 public:
  Family(std::string& out, const char* name, const char* type, const char* help)
      : out_(out), name_(name), type_(type), help_(help) {}
  void add(const std::string& labels, double v) {
    if (std::isnan(v)) return;
    if (!started_) {
      family_header(out_, name_, type_, help_);
      started_ = true;
    }
    value_line(out_, name_, labels, v);
  }
  template <typename T>
  void add(const std::string& labels, const std::optional<T>& v) {
    if (v) add(labels, static_cast<double>(*v));
  }

 private:
  std::string& out_;
  const char* name_;
  const char* type_;
  const char* help_;
  bool started_ = false;
};

// Devices with both a label set and a health reading.
size_t health_count(const ExpositionInput& in, const std::vector<std::string>& labels) {
  if (!in.snapshot) return 0;
  return std::min(labels.size(), in.snapshot->health.size());
}

uint64_t xid_count(const DeviceHealth& h, uint32_t xid) {
  for (const XidCount& c : h.xid_counts) {
    if (c.xid == xid) return c.count;
  }
  return 0;
}

// Sums one NVLink counter over the links that report it; absent when none does.
std::optional<uint64_t> nvlink_sum(const DeviceHealth& h, std::optional<uint64_t> NvlinkErrorCounters::*field) {
  std::optional<uint64_t> sum;
  for (const NvlinkErrorCounters& l : h.nvlink) {
    if (l.*field) sum = sum.value_or(0) + *(l.*field);
  }
  return sum;
}

struct NvlinkCounter {
  std::optional<uint64_t> NvlinkErrorCounters::*field;
  const char* type;       // gpuscope's `type` label.
  const char* dcgm_name;  // dcgm-exporter's per-GPU total.
  const char* dcgm_help;
};
constexpr NvlinkCounter kNvlinkCounters[] = {
    {&NvlinkErrorCounters::replay, "replay", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
     "Total number of NVLink retries."},
    {&NvlinkErrorCounters::recovery, "recovery", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
     "Total number of NVLink recovery errors."},
    {&NvlinkErrorCounters::crc_flit, "crc_flit", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
     "Total number of NVLink flow-control CRC errors."},
    {&NvlinkErrorCounters::crc_data, "crc_data", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
     "Total number of NVLink data CRC errors."},
};

}  // namespace

void render_health(std::string& out, const ExpositionInput& in, const std::vector<std::string>& labels) {
  const size_t n = health_count(in, labels);
  if (!in.snapshot) return;
  const auto& health = in.snapshot->health;

  Family xids(out, "gpuscope_xid_errors_total", "counter",
              "XID errors the driver reported since gpuscope started, by code (NVML XID events; "
              "codes 48, 63, 64, 74, 79, 94 and 95 are listed from 0). Absent where the GPU "
              "reports no XID events.");
  for (size_t i = 0; i < n; ++i) {
    const DeviceHealth& h = health[i];
    if (!h.xid_supported) continue;
    std::vector<uint32_t> codes(std::begin(kPagedXids), std::end(kPagedXids));
    for (const XidCount& c : h.xid_counts) codes.push_back(c.xid);
    std::sort(codes.begin(), codes.end());
    codes.erase(std::unique(codes.begin(), codes.end()), codes.end());
    for (uint32_t code : codes) {
      xids.add(labels[i] + fmt::format(",xid=\"{}\"", code), static_cast<double>(xid_count(h, code)));
    }
  }
  Family last(out, "gpuscope_xid_last_code", "gauge",
              "Code of the latest XID error since gpuscope started; absent until one.");
  for (size_t i = 0; i < n; ++i) last.add(labels[i], health[i].last_xid);

  Family ecc_vol(out, "gpuscope_ecc_volatile_errors_total", "counter",
                 "ECC errors in device memory since the driver loaded, by type (corrected = "
                 "single-bit, uncorrected = double-bit). Absent where ECC is off or unsupported.");
  for (size_t i = 0; i < n; ++i) {
    ecc_vol.add(labels[i] + ",type=\"corrected\"", health[i].ecc_volatile_corrected);
    ecc_vol.add(labels[i] + ",type=\"uncorrected\"", health[i].ecc_volatile_uncorrected);
  }
  Family ecc_agg(out, "gpuscope_ecc_aggregate_errors_total", "counter",
                 "ECC errors in device memory over the GPU's life (InfoROM), by type.");
  for (size_t i = 0; i < n; ++i) {
    ecc_agg.add(labels[i] + ",type=\"corrected\"", health[i].ecc_aggregate_corrected);
    ecc_agg.add(labels[i] + ",type=\"uncorrected\"", health[i].ecc_aggregate_uncorrected);
  }

  Family rows(out, "gpuscope_remapped_rows_total", "counter",
              "Memory rows remapped over the GPU's life, by the error that caused it "
              "(nvmlDeviceGetRemappedRows; Ampere and later).");
  for (size_t i = 0; i < n; ++i) {
    rows.add(labels[i] + ",type=\"correctable\"", health[i].remapped_rows_corrected);
    rows.add(labels[i] + ",type=\"uncorrectable\"", health[i].remapped_rows_uncorrected);
  }
  Family pending(out, "gpuscope_remapped_rows_pending", "gauge",
                 "1 while a row remap waits for a GPU reset to take effect.");
  for (size_t i = 0; i < n; ++i) pending.add(labels[i], health[i].remap_pending);
  Family failure(out, "gpuscope_remapped_rows_failure", "gauge", "1 if a row remap failed: the GPU needs service.");
  for (size_t i = 0; i < n; ++i) failure.add(labels[i], health[i].remap_failure);

  Family replays(out, "gpuscope_pcie_replays_total", "counter",
                 "PCIe replays (link-level retransmissions) since the driver loaded.");
  for (size_t i = 0; i < n; ++i) replays.add(labels[i], health[i].pcie_replays);

  Family nvlink(out, "gpuscope_nvlink_errors_total", "counter",
                "NVLink errors since the driver loaded, per link that is up and type (replay, "
                "recovery, crc_flit, crc_data).");
  for (size_t i = 0; i < n; ++i) {
    for (const NvlinkErrorCounters& l : health[i].nvlink) {
      for (const NvlinkCounter& c : kNvlinkCounters) {
        nvlink.add(labels[i] + fmt::format(",link=\"{}\",type=\"{}\"", l.link, c.type), l.*(c.field));
      }
    }
  }

  Family limit(out, "gpuscope_power_limit_watts", "gauge",
               "Power limit the driver enforces (nvmlDeviceGetEnforcedPowerLimit).");
  for (size_t i = 0; i < n; ++i) limit.add(labels[i], health[i].power_limit_w);

  // From the per-pass DeviceSample, so it is as fresh as gpuscope_clocks_event_reasons.
  Family reasons(out, "gpuscope_clocks_event_reason_active", "gauge",
                 "1 while NVML reports this clocks-event (throttle) reason, else 0 (bits of "
                 "nvmlDeviceGetCurrentClocksEventReasons by name; hw_* are hardware slowdowns).");
  const auto& devices = in.snapshot->devices;
  for (size_t i = 0; i < labels.size() && i < devices.size(); ++i) {
    if (!devices[i].throttle_reasons) continue;
    for (const ClocksEventReason& r : kClocksEventReasons) {
      reasons.add(labels[i] + fmt::format(",reason=\"{}\"", r.name),
                  (*devices[i].throttle_reasons & r.bit) ? 1.0 : 0.0);
    }
  }
}

void render_health_dcgm(std::string& out, const ExpositionInput& in, const std::vector<std::string>& labels) {
  const size_t n = health_count(in, labels);
  if (!in.snapshot) return;
  const auto& health = in.snapshot->health;
  // dcgm-exporter reports 0 until the first XID; so do we, where XIDs are supported.
  Family xid(out, "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.");
  for (size_t i = 0; i < n; ++i) {
    if (health[i].xid_supported) xid.add(labels[i], static_cast<double>(health[i].last_xid.value_or(0)));
  }
  struct Row {
    const char* name;
    const char* type;
    const char* help;
    std::optional<uint64_t> DeviceHealth::*field;
  };
  static constexpr Row kRows[] = {
      {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
       &DeviceHealth::ecc_volatile_corrected},
      {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
       &DeviceHealth::ecc_volatile_uncorrected},
      {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Total number of single-bit persistent ECC errors.",
       &DeviceHealth::ecc_aggregate_corrected},
      {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Total number of double-bit persistent ECC errors.",
       &DeviceHealth::ecc_aggregate_uncorrected},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", &DeviceHealth::pcie_replays},
      {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors",
       &DeviceHealth::remapped_rows_uncorrected},
      {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors",
       &DeviceHealth::remapped_rows_corrected},
  };
  for (const Row& row : kRows) {
    Family f(out, row.name, row.type, row.help);
    for (size_t i = 0; i < n; ++i) f.add(labels[i], health[i].*(row.field));
  }
  Family remap_failure(out, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed");
  for (size_t i = 0; i < n; ++i) remap_failure.add(labels[i], health[i].remap_failure);
  for (const NvlinkCounter& c : kNvlinkCounters) {
    Family f(out, c.dcgm_name, "counter", c.dcgm_help);
    for (size_t i = 0; i < n; ++i) f.add(labels[i], nvlink_sum(health[i], c.field));
  }
}

}  // namespace gpuscope::exporter
