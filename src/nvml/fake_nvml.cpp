// A fake libnvidia-ml.so for tests and benchmarks: exports the NVML C entry points gpuscope
// uses, with values scripted from a fixture file, so that the real dlopen/dlsym loading code,
// the sampler and the front ends run without a GPU.
//
// Fixture: $GPUSCOPE_FAKE_NVML_FIXTURE, read at nvmlInit. Format (testdata/nvml/README.md):
//   driver VERSION
//   init_error CODE                    nvmlInit fails with CODE
//   error FUNCTION CODE                FUNCTION always returns CODE
//   device INDEX uuid=U gpm=0|1 mig=N [events=0] [nvlinks=N] [pci=BUSID] name=REST OF LINE
//                                      (pci default: 00000000:<18 + INDEX, hex>:00.0)
//   frame                              starts the next frame
//   s INDEX key=value...               device readings in NVML units (absent key: NOT_SUPPORTED)
//   p INDEX pid=N used=BYTES [sm=PCT mem=PCT]
//   x INDEX XID                        an XID event, queued when the frame becomes current
// Frames advance each time nvmlDeviceGetUtilizationRates is called for device 0 (the first
// reading of every sampler pass) and wrap around at the end.
// Health keys (health.cpp): ecc_vol_corr ecc_vol_unc ecc_agg_corr ecc_agg_unc; remap_corr
// (with remap_unc, remap_pending, remap_failure, default 0); pcie_replay; power_limit_mw;
// nvlink<L>_replay|_recovery|_crc_flit|_crc_data, for links L < nvlinks (nvlink<L>_up=0: the
// link is down). events=0: the device reports no XID events (nvmlDeviceRegisterEvents fails).
//
// Built twice: the full library, and with FAKE_NVML_LEGACY a driver from before the _v2
// entry points and GPM (only the oldest symbol names exported), to exercise fallbacks.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "core/run_protocol.h"
#include "nvml/nvml_types.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct FakeProcess {
  unsigned int pid = 0;
  unsigned long long used = 0;
  bool has_util = false;
  unsigned int sm = 0, mem = 0;
};

struct FakeFrameDevice {
  std::map<std::string, double> values;  // "gpu_util", "gpm2", ...
  std::vector<FakeProcess> processes;
  std::vector<unsigned long long> xids;  // XID events raised when this frame becomes current.
};

struct FakeGpmSample {
  int device = -1;
  size_t frame = 0;
};

}  // namespace

// nvmlDevice_t points at one of these.
struct nvmlDevice_st {
  int index = 0;
  int gpu_instance_id = -1;  // >= 0 for a MIG device handle.
  std::string uuid;
  std::string name;
  bool gpm = true;
  int mig = 0;
  bool events = true;  // Supports nvmlEventTypeXidCriticalError.
  unsigned int nvlinks = 0;
  std::string pci_bus_id;  // Empty: the default for the index.
};

struct nvmlEventSet_st {
  std::vector<nvmlDevice_t> registered;
  std::vector<nvmlEventData_t> queue;  // Oldest first.
};

struct nvmlGpmSample_st {
  FakeGpmSample s;
};

namespace {

struct FakeState {
  std::mutex mu;
  bool initialized = false;
  int init_error = 0;
  std::string driver = "000.00";
  std::map<std::string, int> errors;
  std::vector<nvmlDevice_st*> devices;
  std::vector<std::vector<nvmlDevice_st*>> mig_devices;
  // Every handle ever created, kept across reloads so a stale nvmlDevice_t never dangles.
  std::vector<std::unique_ptr<nvmlDevice_st>> owned;
  std::vector<std::vector<FakeFrameDevice>> frames;  // [frame][device]
  std::vector<nvmlEventSet_st*> event_sets;          // Live sets (created, not yet freed).
  size_t ticks = 0;
  size_t frame() const { return frames.empty() ? 0 : (ticks == 0 ? 0 : ticks - 1) % frames.size(); }
};

FakeState& state() {
  static FakeState s;  // Destroyed when the library is unloaded (dlclose).
  return s;
}

// Called by every nvmlInit while not initialized: a test may init the same loaded library
// again with another fixture. Old handles stay in `owned` so that a stale nvmlDevice_t never
// dangles while the library is loaded.
void load_fixture(FakeState& st) {
  st.init_error = 0;
  st.driver = "000.00";
  st.errors.clear();
  st.devices.clear();
  st.mig_devices.clear();
  st.frames.clear();
  st.ticks = 0;
  const char* path = std::getenv(gpuscope::run_protocol::kEnvFakeNvmlFixture.name);
  if (!path) {
    std::fprintf(stderr, "fake NVML: %s is not set\n", gpuscope::run_protocol::kEnvFakeNvmlFixture.name);
    st.init_error = NVML_ERROR_DRIVER_NOT_LOADED;
    return;
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "fake NVML: cannot read fixture %s\n", path);
    st.init_error = NVML_ERROR_DRIVER_NOT_LOADED;
    return;
  }
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "driver") {
      ls >> st.driver;
    } else if (kind == "init_error") {
      ls >> st.init_error;
    } else if (kind == "error") {
      std::string fn;
      int code = 0;
      ls >> fn >> code;
      st.errors[fn] = code;
    } else if (kind == "device") {
      auto* d = st.owned.emplace_back(std::make_unique<nvmlDevice_st>()).get();
      ls >> d->index;
      for (std::string tok; ls >> tok;) {
        if (tok.rfind("uuid=", 0) == 0)
          d->uuid = tok.substr(5);
        else if (tok.rfind("gpm=", 0) == 0)
          d->gpm = tok.substr(4) != "0";
        else if (tok.rfind("mig=", 0) == 0)
          d->mig = std::atoi(tok.c_str() + 4);
        else if (tok.rfind("events=", 0) == 0)
          d->events = tok.substr(7) != "0";
        else if (tok.rfind("nvlinks=", 0) == 0)
          d->nvlinks = static_cast<unsigned int>(std::atoi(tok.c_str() + 8));
        else if (tok.rfind("pci=", 0) == 0)
          d->pci_bus_id = tok.substr(4);
        else if (tok.rfind("name=", 0) == 0) {
          std::string rest;
          std::getline(ls, rest);
          d->name = tok.substr(5) + rest;
          break;
        }
      }
      st.devices.push_back(d);
      std::vector<nvmlDevice_st*> migs;
      for (int m = 0; m < d->mig; ++m) {
        auto* md = st.owned.emplace_back(std::make_unique<nvmlDevice_st>(*d)).get();
        md->gpu_instance_id = m + 1;
        md->mig = 0;
        md->uuid = "MIG-" + d->uuid + "-" + std::to_string(m + 1);
        migs.push_back(md);
      }
      st.mig_devices.push_back(migs);
    } else if (kind == "frame") {
      st.frames.emplace_back(st.devices.size());
    } else if (kind == "x") {
      size_t index = 0;
      unsigned long long xid = 0;
      ls >> index >> xid;
      if (!st.frames.empty() && index < st.frames.back().size()) st.frames.back()[index].xids.push_back(xid);
    } else if (kind == "s" || kind == "p") {
      size_t index = 0;
      ls >> index;
      if (st.frames.empty() || index >= st.frames.back().size()) continue;
      FakeFrameDevice& fd = st.frames.back()[index];
      if (kind == "s") {
        for (std::string tok; ls >> tok;) {
          auto eq = tok.find('=');
          if (eq != std::string::npos) fd.values[tok.substr(0, eq)] = std::atof(tok.c_str() + eq + 1);
        }
      } else {
        FakeProcess p;
        for (std::string tok; ls >> tok;) {
          auto eq = tok.find('=');
          if (eq == std::string::npos) continue;
          std::string k = tok.substr(0, eq);
          const char* v = tok.c_str() + eq + 1;
          if (k == "pid")
            p.pid = static_cast<unsigned int>(std::strtoul(v, nullptr, 10));
          else if (k == "used")
            p.used = std::strtoull(v, nullptr, 10);
          else if (k == "sm") {
            p.sm = static_cast<unsigned int>(std::atof(v));
            p.has_util = true;
          } else if (k == "mem")
            p.mem = static_cast<unsigned int>(std::atof(v));
        }
        fd.processes.push_back(p);
      }
    }
  }
}

// The scripted error for `fn`, or NVML_ERROR_UNINITIALIZED before init, else success.
int gate(const char* fn) {
  FakeState& st = state();
  if (!st.initialized) return NVML_ERROR_UNINITIALIZED;
  auto it = st.errors.find(fn);
  return it == st.errors.end() ? NVML_SUCCESS : it->second;
}

const FakeFrameDevice* current(nvmlDevice_t d) {
  FakeState& st = state();
  if (!d || st.frames.empty()) return nullptr;
  return &st.frames[st.frame()][static_cast<size_t>(d->index)];
}

// Reads key `k` of the device's current frame.
int value(nvmlDevice_t d, const char* k, double* out) {
  const FakeFrameDevice* fd = current(d);
  if (!fd) return NVML_ERROR_NOT_SUPPORTED;
  auto it = fd->values.find(k);
  if (it == fd->values.end()) return NVML_ERROR_NOT_SUPPORTED;
  *out = it->second;
  return NVML_SUCCESS;
}

template <typename T>
int scalar(const char* fn, nvmlDevice_t d, const char* k, T* out) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate(fn)) return rc;
  if (!d || !out) return NVML_ERROR_INVALID_ARGUMENT;
  double v = 0;
  if (int rc = value(d, k, &v)) return rc;
  *out = static_cast<T>(v);
  return NVML_SUCCESS;
}

// Queues the current frame's XID events on every event set their device is registered with.
void raise_xids(FakeState& st) {
  if (st.frames.empty()) return;
  const auto& frame = st.frames[st.frame()];
  for (size_t i = 0; i < frame.size() && i < st.devices.size(); ++i) {
    for (unsigned long long xid : frame[i].xids) {
      for (nvmlEventSet_st* set : st.event_sets) {
        for (nvmlDevice_t d : set->registered) {
          if (d != st.devices[i]) continue;
          nvmlEventData_t e{};
          e.device = d;
          e.eventType = nvmlEventTypeXidCriticalError;
          e.eventData = xid;
          e.gpuInstanceId = 0xFFFFFFFFu;
          e.computeInstanceId = 0xFFFFFFFFu;
          set->queue.push_back(e);
        }
      }
    }
  }
}

int copy_string(const std::string& s, char* buf, unsigned int len) {
  if (!buf || len <= s.size()) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

int init_impl() {
  FakeState& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.initialized) return NVML_SUCCESS;
  load_fixture(st);
  if (st.init_error) return st.init_error;
  st.initialized = true;
  return NVML_SUCCESS;
}

int count_impl(unsigned int* count) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceGetCount")) return rc;
  *count = static_cast<unsigned int>(state().devices.size());
  return NVML_SUCCESS;
}

int handle_impl(unsigned int i, nvmlDevice_t* d) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceGetHandleByIndex")) return rc;
  if (i >= state().devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *d = state().devices[i];
  return NVML_SUCCESS;
}

template <typename Info>
int processes_impl(const char* fn, nvmlDevice_t d, unsigned int* count, Info* infos) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate(fn)) return rc;
  const FakeFrameDevice* fd = current(d);
  size_t n = fd ? fd->processes.size() : 0;
  if (*count < n || (!infos && n > 0)) {
    *count = static_cast<unsigned int>(n);
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *count = static_cast<unsigned int>(n);
  for (size_t i = 0; i < n; ++i) {
    Info info{};
    info.pid = fd->processes[i].pid;
    info.usedGpuMemory = fd->processes[i].used;
    if constexpr (sizeof(Info) == sizeof(nvmlProcessInfo_t)) {
      reinterpret_cast<nvmlProcessInfo_t&>(info).gpuInstanceId = 0xFFFFFFFFu;
      reinterpret_cast<nvmlProcessInfo_t&>(info).computeInstanceId = 0xFFFFFFFFu;
    }
    infos[i] = info;
  }
  return NVML_SUCCESS;
}

}  // namespace

// ---- Exported entry points, in nvml_api.h's table order. ----

FAKE_EXPORT nvmlReturn_t nvmlInit() { return init_impl(); }
FAKE_EXPORT nvmlReturn_t nvmlShutdown() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().initialized = false;
  return NVML_SUCCESS;
}
FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    default:
      return "Unknown Error (fake)";
  }
}
FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* buf, unsigned int len) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlSystemGetDriverVersion")) return rc;
  return copy_string(state().driver, buf, len);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* c) { return count_impl(c); }
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t* d) { return handle_impl(i, d); }
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* buf, unsigned int len) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceGetName")) return rc;
  return copy_string(d->name, buf, len);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* buf, unsigned int len) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceGetUUID")) return rc;
  return copy_string(d->uuid, buf, len);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  std::lock_guard<std::mutex> lock(state().mu);
  FakeState& st = state();
  if (st.initialized && d && d->index == 0 && d->gpu_instance_id < 0) {
    ++st.ticks;
    raise_xids(st);
  }
  if (int rc = gate("nvmlDeviceGetUtilizationRates")) return rc;
  double g = 0, m = 0;
  if (int rc = value(d, "gpu_util", &g)) return rc;
  if (int rc = value(d, "mem_util", &m)) return rc;
  u->gpu = static_cast<unsigned int>(g);
  u->memory = static_cast<unsigned int>(m);
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* mem) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceGetMemoryInfo")) return rc;
  double used = 0, total = 0;
  if (int rc = value(d, "mem_used", &used)) return rc;
  if (int rc = value(d, "mem_total", &total)) return rc;
  mem->used = static_cast<unsigned long long>(used);
  mem->total = static_cast<unsigned long long>(total);
  mem->free = mem->total - mem->used;
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int* mw) {
  return scalar("nvmlDeviceGetPowerUsage", d, "power_mw", mw);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, unsigned int type, unsigned int* mhz) {
  return scalar("nvmlDeviceGetClockInfo", d, type == NVML_CLOCK_MEM ? "mem_clock" : "sm_clock", mhz);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, unsigned int sensor, unsigned int* t) {
  return scalar("nvmlDeviceGetTemperature", d, "temp", t);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long* r) {
  return scalar("nvmlDeviceGetCurrentClocksThrottleReasons", d, "throttle", r);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, unsigned int counter, unsigned int* kbs) {
  return scalar("nvmlDeviceGetPcieThroughput", d, counter == NVML_PCIE_UTIL_TX_BYTES ? "pcie_tx_kbs" : "pcie_rx_kbs",
                kbs);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int* n,
                                                              nvmlProcessInfo_v1_t* infos) {
  return processes_impl("nvmlDeviceGetComputeRunningProcesses", d, n, infos);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t* out,
                                                         unsigned int* n, unsigned long long since_us) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceGetProcessUtilization")) return rc;
  const FakeFrameDevice* fd = current(d);
  std::vector<FakeProcess> with_util;
  if (fd) {
    for (const auto& p : fd->processes) {
      if (p.has_util) with_util.push_back(p);
    }
  }
  if (with_util.empty()) return NVML_ERROR_NOT_FOUND;
  if (!out || *n < with_util.size()) {
    *n = static_cast<unsigned int>(with_util.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  *n = static_cast<unsigned int>(with_util.size());
  for (size_t i = 0; i < with_util.size(); ++i) {
    out[i] = nvmlProcessUtilizationSample_t{};
    out[i].pid = with_util[i].pid;
    out[i].timeStamp = static_cast<unsigned long long>(ts.tv_sec) * 1000000ull + ts.tv_nsec / 1000;
    out[i].smUtil = with_util[i].sm;
    out[i].memUtil = with_util[i].mem;
  }
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, unsigned int type, unsigned int counter,
                                                     unsigned long long* n) {
  const char* key = counter == NVML_VOLATILE_ECC
                        ? (type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? "ecc_vol_corr" : "ecc_vol_unc")
                        : (type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? "ecc_agg_corr" : "ecc_agg_unc");
  return scalar("nvmlDeviceGetTotalEccErrors", d, key, n);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int* n) {
  return scalar("nvmlDeviceGetPcieReplayCounter", d, "pcie_replay", n);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int* mw) {
  return scalar("nvmlDeviceGetEnforcedPowerLimit", d, "power_limit_mw", mw);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, unsigned int* active) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceGetNvLinkState")) return rc;
  if (!d || !active) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= d->nvlinks) return NVML_ERROR_INVALID_ARGUMENT;
  double up = 1;
  value(d, ("nvlink" + std::to_string(link) + "_up").c_str(), &up);
  *active = up != 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned int link, unsigned int counter,
                                                         unsigned long long* n) {
  static const char* const kNames[] = {"replay", "recovery", "crc_flit", "crc_data"};
  if (!d || link >= d->nvlinks || counter >= 4) return NVML_ERROR_INVALID_ARGUMENT;
  std::string key = "nvlink" + std::to_string(link) + "_" + kNames[counter];
  return scalar("nvmlDeviceGetNvLinkErrorCounter", d, key.c_str(), n);
}
FAKE_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlEventSetCreate")) return rc;
  if (!set) return NVML_ERROR_INVALID_ARGUMENT;
  *set = new nvmlEventSet_st();
  state().event_sets.push_back(*set);
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  std::lock_guard<std::mutex> lock(state().mu);
  auto& sets = state().event_sets;
  for (size_t i = 0; i < sets.size(); ++i) {
    if (sets[i] == set) {
      sets.erase(sets.begin() + static_cast<long>(i));
      delete set;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_INVALID_ARGUMENT;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long* types) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceGetSupportedEventTypes")) return rc;
  if (!d || !types) return NVML_ERROR_INVALID_ARGUMENT;
  *types = d->events ? nvmlEventTypeXidCriticalError : 0;
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceRegisterEvents")) return rc;
  if (!d || !set) return NVML_ERROR_INVALID_ARGUMENT;
  if (!d->events && (types & nvmlEventTypeXidCriticalError)) return NVML_ERROR_NOT_SUPPORTED;
  set->registered.push_back(d);
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_LEGACY

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* pci) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceGetPciInfo_v3")) return rc;
  if (!d || !pci) return NVML_ERROR_INVALID_ARGUMENT;
  *pci = {};
  pci->bus = static_cast<unsigned int>(0x18 + d->index);
  if (d->pci_bus_id.empty())
    std::snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus & 0xff);
  else
    std::snprintf(pci->busId, sizeof pci->busId, "%s", d->pci_bus_id.c_str());
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", pci->busId + 4);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlEventSetWait_v2")) return rc;
  if (!set || !data) return NVML_ERROR_INVALID_ARGUMENT;
  // The fake never sleeps: a test that passed a timeout would hang the sampler otherwise.
  if (timeout_ms != 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (set->queue.empty()) return NVML_ERROR_TIMEOUT;
  *data = set->queue.front();
  set->queue.erase(set->queue.begin());
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int* corrected, unsigned int* uncorrected,
                                                   unsigned int* pending, unsigned int* failure) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceGetRemappedRows")) return rc;
  if (!d || !corrected || !uncorrected || !pending || !failure) return NVML_ERROR_INVALID_ARGUMENT;
  double c = 0, u = 0, p = 0, f = 0;
  if (int rc = value(d, "remap_corr", &c)) return rc;
  value(d, "remap_unc", &u);
  value(d, "remap_pending", &p);
  value(d, "remap_failure", &f);
  *corrected = static_cast<unsigned int>(c);
  *uncorrected = static_cast<unsigned int>(u);
  *pending = static_cast<unsigned int>(p);
  *failure = static_cast<unsigned int>(f);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlInit_v2() { return init_impl(); }
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* c) { return count_impl(c); }
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* d) { return handle_impl(i, d); }
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t* mem) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceGetMemoryInfo_v2")) return rc;
  if (mem->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  double used = 0, total = 0;
  if (int rc = value(d, "mem_used", &used)) return rc;
  if (int rc = value(d, "mem_total", &total)) return rc;
  mem->used = static_cast<unsigned long long>(used);
  mem->total = static_cast<unsigned long long>(total);
  mem->reserved = 0;
  mem->free = mem->total - mem->used;
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long* mj) {
  return scalar("nvmlDeviceGetTotalEnergyConsumption", d, "energy_mj", mj);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long* r) {
  return scalar("nvmlDeviceGetCurrentClocksEventReasons", d, "throttle", r);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int* n,
                                                                 nvmlProcessInfo_t* infos) {
  return processes_impl("nvmlDeviceGetComputeRunningProcesses_v3", d, n, infos);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int* cur, unsigned int* pending) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlDeviceGetMigMode")) return rc;
  *cur = *pending = d->mig > 0 ? 1u : 0u;
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int* n) {
  std::lock_guard<std::mutex> lock(state().mu);
  *n = static_cast<unsigned int>(d->mig);
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int i, nvmlDevice_t* mig) {
  std::lock_guard<std::mutex> lock(state().mu);
  const auto& migs = state().mig_devices[static_cast<size_t>(d->index)];
  if (i >= migs.size()) return NVML_ERROR_NOT_FOUND;
  *mig = migs[i];
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int* id) {
  if (d->gpu_instance_id < 0) return NVML_ERROR_INVALID_ARGUMENT;
  *id = static_cast<unsigned int>(d->gpu_instance_id);
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t* s) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlGpmQueryDeviceSupport")) return rc;
  if (s->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  s->isSupportedDevice = d->gpm ? 1u : 0u;
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* s) {
  *s = new nvmlGpmSample_st();
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s) {
  delete s;
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t s) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlGpmSampleGet")) return rc;
  if (!d->gpm) return NVML_ERROR_NOT_SUPPORTED;
  s->s = FakeGpmSample{d->index, state().frame()};
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t d, unsigned int gi, nvmlGpmSample_t s) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (int rc = gate("nvmlGpmMigSampleGet")) return rc;
  if (!d->gpm || gi == 0 || static_cast<int>(gi) > d->mig) return NVML_ERROR_INVALID_ARGUMENT;
  s->s = FakeGpmSample{d->index, state().frame()};
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* req) {
  std::lock_guard<std::mutex> lock(state().mu);
  FakeState& st = state();
  if (int rc = gate("nvmlGpmMetricsGet")) return rc;
  // The real API wants the plain number 1 here, not NVML_STRUCT_VERSION.
  if (req->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (!req->sample1 || !req->sample2 || req->numMetrics > NVML_GPM_METRIC_MAX) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const FakeGpmSample& s2 = req->sample2->s;
  if (st.frames.empty() || s2.device < 0) return NVML_ERROR_INVALID_ARGUMENT;
  const FakeFrameDevice& fd = st.frames[s2.frame][static_cast<size_t>(s2.device)];
  for (unsigned int i = 0; i < req->numMetrics; ++i) {
    nvmlGpmMetric_t& m = req->metrics[i];
    auto it = fd.values.find("gpm" + std::to_string(m.metricId));
    m.metricInfo.shortName = m.metricInfo.longName = m.metricInfo.unit = nullptr;
    if (it == fd.values.end()) {
      m.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      m.value = 0;
    } else {
      m.nvmlReturn = NVML_SUCCESS;
      m.value = it->second;
    }
  }
  return NVML_SUCCESS;
}

#endif  // FAKE_NVML_LEGACY
