// The hand-off between libgpuscope_blas.so (the cuBLAS/cuBLASLt interposer, LD_PRELOADed, no
// CUPTI) and libgpuscope_inject.so (which writes the capture). The interposer appends one
// GemmCall per GEMM entry-point call to an in-memory ring; the injection library's writer
// thread finds `gpuscope_blas_drain` with dlsym(RTLD_DEFAULT) (preloaded libraries are global)
// and moves the calls into the capture. Application threads do no I/O.
//
// Plain C layout: the two libraries are built together but loaded independently.
#pragma once

#include <stddef.h>
#include <stdint.h>

extern "C" {

enum GpuscopeGemmApi : uint16_t {
  kGpuscopeGemmLtMatmul = 0,
  kGpuscopeGemmEx,
  kGpuscopeGemmStridedBatchedEx,
  kGpuscopeGemmBatchedEx,
  kGpuscopeSgemm,
  kGpuscopeDgemm,
  kGpuscopeHgemm,
  kGpuscopeSgemmStridedBatched,
  kGpuscopeDgemmStridedBatched,
  kGpuscopeHgemmStridedBatched,
  kGpuscopeGemmApiCount,
};

struct GpuscopeGemmCall {
  int64_t start_ns;  // Host CLOCK_REALTIME around the call into cuBLAS.
  int64_t end_ns;
  int64_t m, n, k, batch;
  int32_t tid;
  int32_t a_type, b_type, c_type;  // cudaDataType_t values.
  uint16_t api;                    // GpuscopeGemmApi.
  uint8_t trans_a, trans_b;
};

// Moves up to `max` recorded calls into `out`; returns how many. *dropped_total is set to the
// number of calls dropped so far because the ring was full.
typedef size_t (*GpuscopeBlasDrainFn)(GpuscopeGemmCall* out, size_t max, uint64_t* dropped_total);
}

namespace gpuscope::cupti {
inline const char* gemm_api_name(uint16_t api) {
  static const char* const kNames[] = {"cublasLtMatmul",
                                       "cublasGemmEx",
                                       "cublasGemmStridedBatchedEx",
                                       "cublasGemmBatchedEx",
                                       "cublasSgemm",
                                       "cublasDgemm",
                                       "cublasHgemm",
                                       "cublasSgemmStridedBatched",
                                       "cublasDgemmStridedBatched",
                                       "cublasHgemmStridedBatched"};
  return api < kGpuscopeGemmApiCount ? kNames[api] : "cublasUnknownGemm";
}
}  // namespace gpuscope::cupti
