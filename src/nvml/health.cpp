#include "nvml/health.h"

#include <algorithm>

namespace gpuscope::nvml {

namespace {

// At most this many events are taken per pass, so that an event storm (a GPU repeating an
// XID in a loop) cannot hold the sampler; the rest wait for the next pass.
constexpr int kMaxEventsPerPass = 1024;

}  // namespace

HealthCollector::HealthCollector(NvmlApi& api, std::vector<Device> devices, int64_t slow_interval_ns, Check check)
    : api_(api), devices_(std::move(devices)), slow_interval_ns_(slow_interval_ns), check_(std::move(check)) {
  held_.resize(devices_.size());
  for (size_t i = 0; i < devices_.size(); ++i) held_[i].device = devices_[i].index;
  if (!api_.event_set_wait_v2 || NvmlApi::call(api_.event_set_create, &events_) != NVML_SUCCESS) {
    events_ = nullptr;
    return;
  }
  for (size_t i = 0; i < devices_.size(); ++i) {
    const Device& d = devices_[i];
    if (!d.handle) continue;
    unsigned long long supported = 0;
    if (NvmlApi::call(api_.device_get_supported_event_types, d.handle, &supported) != NVML_SUCCESS ||
        !(supported & nvmlEventTypeXidCriticalError)) {
      continue;
    }
    held_[i].xid_supported =
        check_(NvmlApi::call(api_.device_register_events, d.handle, nvmlEventTypeXidCriticalError, events_),
               "nvmlDeviceRegisterEvents", d.label);
  }
  // No GPU registered: no set to poll every pass.
  if (std::none_of(held_.begin(), held_.end(), [](const DeviceHealth& h) { return h.xid_supported; })) {
    NvmlApi::call(api_.event_set_free, events_);
    events_ = nullptr;
  }
}

HealthCollector::~HealthCollector() {
  if (events_) NvmlApi::call(api_.event_set_free, events_);
}

void HealthCollector::count_xid(size_t i, uint32_t xid) {
  DeviceHealth& h = held_[i];
  ++h.xid_total;
  h.last_xid = xid;
  h.updated = true;
  auto it = std::lower_bound(h.xid_counts.begin(), h.xid_counts.end(), xid,
                             [](const XidCount& c, uint32_t x) { return c.xid < x; });
  if (it == h.xid_counts.end() || it->xid != xid) it = h.xid_counts.insert(it, XidCount{xid, 0});
  ++it->count;
}

void HealthCollector::drain_events() {
  if (!events_) return;
  for (int n = 0; n < kMaxEventsPerPass; ++n) {
    nvmlEventData_t data{};
    // Timeout 0: returns NVML_ERROR_TIMEOUT at once when no event is queued.
    nvmlReturn_t rc = api_.event_set_wait_v2(events_, &data, 0);
    if (rc == NVML_ERROR_TIMEOUT) return;
    if (!check_(rc, "nvmlEventSetWait_v2", "the XID event set")) return;
    if (!(data.eventType & nvmlEventTypeXidCriticalError)) continue;
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i].handle && devices_[i].handle == data.device && held_[i].xid_supported) {
        count_xid(i, static_cast<uint32_t>(data.eventData));
        break;
      }
    }
  }
}

void HealthCollector::read_slow(const Device& d, DeviceHealth& h) {
  auto ecc = [&](unsigned int type, unsigned int counter, std::optional<uint64_t>& field) {
    unsigned long long v = 0;
    field.reset();
    if (check_(NvmlApi::call(api_.device_get_total_ecc_errors, d.handle, type, counter, &v),
               "nvmlDeviceGetTotalEccErrors", d.label)) {
      field = v;
    }
  };
  ecc(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, h.ecc_volatile_corrected);
  ecc(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, h.ecc_volatile_uncorrected);
  ecc(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, h.ecc_aggregate_corrected);
  ecc(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, h.ecc_aggregate_uncorrected);

  unsigned int corrected = 0, uncorrected = 0, pending = 0, failure = 0;
  h.remapped_rows_corrected.reset();
  h.remapped_rows_uncorrected.reset();
  h.remap_pending.reset();
  h.remap_failure.reset();
  if (check_(NvmlApi::call(api_.device_get_remapped_rows, d.handle, &corrected, &uncorrected, &pending, &failure),
             "nvmlDeviceGetRemappedRows", d.label)) {
    h.remapped_rows_corrected = corrected;
    h.remapped_rows_uncorrected = uncorrected;
    h.remap_pending = pending != 0;
    h.remap_failure = failure != 0;
  }

  unsigned int replays = 0;
  h.pcie_replays.reset();
  if (check_(NvmlApi::call(api_.device_get_pcie_replay_counter, d.handle, &replays), "nvmlDeviceGetPcieReplayCounter",
             d.label)) {
    h.pcie_replays = replays;
  }

  unsigned int mw = 0;
  h.power_limit_w.reset();
  if (check_(NvmlApi::call(api_.device_get_enforced_power_limit, d.handle, &mw), "nvmlDeviceGetEnforcedPowerLimit",
             d.label)) {
    h.power_limit_w = mw / 1000.0;
  }

  // NVLink: links past the device's count answer INVALID_ARGUMENT, a GPU without NVLink
  // NOT_SUPPORTED; both end the scan without a warning. Only links that are up are read.
  h.nvlink.clear();
  for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    unsigned int state = NVML_FEATURE_DISABLED;
    nvmlReturn_t rc = NvmlApi::call(api_.device_get_nvlink_state, d.handle, link, &state);
    if (rc == NVML_ERROR_INVALID_ARGUMENT || !check_(rc, "nvmlDeviceGetNvLinkState", d.label)) {
      break;
    }
    if (state != NVML_FEATURE_ENABLED) continue;
    NvlinkErrorCounters c;
    c.link = static_cast<int32_t>(link);
    auto counter = [&](unsigned int which, std::optional<uint64_t>& field) {
      unsigned long long v = 0;
      if (check_(NvmlApi::call(api_.device_get_nvlink_error_counter, d.handle, link, which, &v),
                 "nvmlDeviceGetNvLinkErrorCounter", d.label)) {
        field = v;
      }
    };
    counter(NVML_NVLINK_ERROR_DL_REPLAY, c.replay);
    counter(NVML_NVLINK_ERROR_DL_RECOVERY, c.recovery);
    counter(NVML_NVLINK_ERROR_DL_CRC_FLIT, c.crc_flit);
    counter(NVML_NVLINK_ERROR_DL_CRC_DATA, c.crc_data);
    h.nvlink.push_back(c);
  }
  h.updated = true;
}

void HealthCollector::sample(int64_t now_mono_ns, std::vector<DeviceHealth>* out) {
  for (DeviceHealth& h : held_) h.updated = false;
  drain_events();
  if (!read_once_ || now_mono_ns - last_slow_mono_ns_ >= slow_interval_ns_) {
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i].handle) read_slow(devices_[i], held_[i]);
    }
    read_once_ = true;
    last_slow_mono_ns_ = now_mono_ns;
  }
  *out = held_;
}

}  // namespace gpuscope::nvml
