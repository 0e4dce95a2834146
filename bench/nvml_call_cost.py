#!/usr/bin/env python3
"""CPU cost of each NVML call the sampler makes, on the GPU machine (nvidia-ml-py).

The target (8 GPUs at 10 Hz under 1% of a core) is missed on the real driver; this
measures which calls cost the CPU time. Each call is repeated N times; CPU time per call is
process time (user + system), wall time beside it. Prints a table.
  python3 scripts/nvml-call-cost.py [N]
"""
import sys
import time

import pynvml as nv

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
nv.nvmlInit()
h = nv.nvmlDeviceGetHandleByIndex(0)
print("driver", nv.nvmlSystemGetDriverVersion(), "gpu", nv.nvmlDeviceGetName(h))


def cost(name, fn):
    try:
        fn()
    except Exception as e:  # Unsupported here: say so, do not time.
        print(f"| {name} | unsupported: {e} | | |")
        return
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(N):
        fn()
    c1, w1 = time.process_time(), time.perf_counter()
    print(f"| {name} | {1e6 * (c1 - c0) / N:.1f} | {1e6 * (w1 - w0) / N:.1f} | {N} |")


print("| call | CPU us per call | wall us per call | calls |")
print("| --- | --- | --- | --- |")
cost("nvmlDeviceGetUtilizationRates", lambda: nv.nvmlDeviceGetUtilizationRates(h))
cost("nvmlDeviceGetMemoryInfo", lambda: nv.nvmlDeviceGetMemoryInfo(h))
cost("nvmlDeviceGetPowerUsage", lambda: nv.nvmlDeviceGetPowerUsage(h))
cost("nvmlDeviceGetTotalEnergyConsumption", lambda: nv.nvmlDeviceGetTotalEnergyConsumption(h))
cost("nvmlDeviceGetClockInfo(SM)", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
cost("nvmlDeviceGetTemperature", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
cost("nvmlDeviceGetCurrentClocksEventReasons",
     lambda: nv.nvmlDeviceGetCurrentClocksThrottleReasons(h))
cost("nvmlDeviceGetComputeRunningProcesses", lambda: nv.nvmlDeviceGetComputeRunningProcesses(h))
cost("nvmlDeviceGetProcessUtilization", lambda: nv.nvmlDeviceGetProcessUtilization(h, 0))
cost("nvmlDeviceGetPcieThroughput(TX)",
     lambda: nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_TX_BYTES))
# Health (src/nvml/health.cpp): XIDs every pass, the rest every 10 s.
cost("nvmlDeviceGetTotalEccErrors(uncorrected, volatile)",
     lambda: nv.nvmlDeviceGetTotalEccErrors(h, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                            nv.NVML_VOLATILE_ECC))
cost("nvmlDeviceGetRemappedRows", lambda: nv.nvmlDeviceGetRemappedRows(h))
cost("nvmlDeviceGetPcieReplayCounter", lambda: nv.nvmlDeviceGetPcieReplayCounter(h))
cost("nvmlDeviceGetEnforcedPowerLimit", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
cost("nvmlDeviceGetNvLinkState(0)", lambda: nv.nvmlDeviceGetNvLinkState(h, 0))
cost("nvmlDeviceGetNvLinkErrorCounter(0, replay)",
     lambda: nv.nvmlDeviceGetNvLinkErrorCounter(h, 0, nv.NVML_NVLINK_ERROR_DL_REPLAY))
try:
    events = nv.nvmlEventSetCreate()
    nv.nvmlDeviceRegisterEvents(h, nv.nvmlEventTypeXidCriticalError, events)

    def wait_none():  # No XID queued: NVML_ERROR_TIMEOUT at once (timeout 0).
        try:
            nv.nvmlEventSetWait_v2(events, 0)
        except nv.NVMLError_Timeout:
            pass

    cost("nvmlEventSetWait_v2(timeout 0, nothing queued)", wait_none)
    nv.nvmlEventSetFree(events)
except Exception as e:
    print(f"| XID event set | unavailable: {e} | | |")
try:
    sample = nv.nvmlGpmSampleAlloc()
    cost("nvmlGpmSampleGet", lambda: nv.nvmlGpmSampleGet(h, sample))
    s1, s2 = nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()
    nv.nvmlGpmSampleGet(h, s1)
    time.sleep(0.11)
    nv.nvmlGpmSampleGet(h, s2)
    ids = [2, 3, 5, 6, 7, 9, 10, 11, 12, 13, 20, 21, 60, 61]

    def metrics():
        m = nv.c_nvmlGpmMetricsGet_t()
        m.version = nv.NVML_GPM_METRICS_GET_VERSION
        m.numMetrics = len(ids)
        m.sample1, m.sample2 = s1, s2
        for i, mid in enumerate(ids):
            m.metrics[i].metricId = mid
        nv.nvmlGpmMetricsGet(m)

    cost("nvmlGpmMetricsGet (14 metrics)", metrics)
except Exception as e:
    print(f"| GPM | unavailable in this nvidia-ml-py: {e} | | |")
nv.nvmlShutdown()
