// CUDA helpers shared by the workloads: error checks that name the call, wall-clock timing, and
// the NVTX "step" range every workload wraps around each training/benchmark step.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

namespace gpuscope::workloads {

// Workloads are stand-alone programs: a CUDA error is fatal and names the call and location.
inline void CudaCheck(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", file, line, call, cudaGetErrorString(e), static_cast<int>(e));
    std::exit(1);
  }
}
#define CUDA_CHECK(call) ::gpuscope::workloads::CudaCheck((call), #call, __FILE__, __LINE__)
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// Monotonic host clock, seconds.
inline double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// RAII NVTX range; every workload names its per-step range "step" (gpuscope's step analysis
// looks for that name).
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

inline int SmCount() {
  int dev = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// Host-side busy work standing in for data preparation (decoding, augmentation): spins for
// `ms` milliseconds of wall time, touching `buf` so the compiler keeps it.
inline void HostBusyWork(double ms, unsigned* buf, size_t n) {
  double end = NowS() + ms * 1e-3;
  unsigned x = 2463534242u;
  size_t i = 0;
  while (NowS() < end) {
    for (int k = 0; k < 256; ++k) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      if (n) buf[i++ % n] ^= x;
    }
  }
}

}  // namespace gpuscope::workloads
