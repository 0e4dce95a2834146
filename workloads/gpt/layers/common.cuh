// Helpers shared by the GPT layers: float <-> storage type conversion and warp / block reductions
// (device), and timing of equivalent candidates for autotuning (host). Storage type T is float or
// __nv_bfloat16; arithmetic is always fp32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "common/cuda_util.h"

namespace gpuscope::gpt {

__device__ __forceinline__ float ToF(float x) { return x; }
__device__ __forceinline__ float ToF(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T> __device__ __forceinline__ T FromF(float x);
template <> __device__ __forceinline__ float FromF<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 FromF<__nv_bfloat16>(float x) { return __float2bfloat16(x); }

template <class T> constexpr cudaDataType_t CudaType() {
  return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;
}

__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// All threads of the block get the result. blockDim.x a multiple of 32, at most 1024.
// `scratch` holds 32 floats; the block must not use it concurrently for anything else.
__device__ __forceinline__ float BlockReduce(float v, float* scratch, bool is_max) {
  const int lane = threadIdx.x % 32, wid = threadIdx.x / 32, nw = blockDim.x / 32;
  v = is_max ? WarpMax(v) : WarpSum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[wid] = v;
  __syncthreads();
  float r = lane < nw ? scratch[lane] : (is_max ? -INFINITY : 0.f);
  return is_max ? WarpMax(r) : WarpSum(r);
}

inline int CeilDiv(size_t a, size_t b) { return static_cast<int>((a + b - 1) / b); }

// Milliseconds per run of each of n candidates on stream s, for choosing the fastest of
// equivalent kernels. run(i) enqueues one run of candidate i and returns false if it could not
// (that candidate's time is then +inf). Each candidate gets one warm-up run, then `runs` runs
// between CUDA events; one synchronisation at the end.
template <class Run>
std::vector<float> TimeCandidates(size_t n, int runs, cudaStream_t s, Run&& run) {
  std::vector<cudaEvent_t> start(n), stop(n);
  std::vector<float> ms(n, INFINITY);
  std::vector<bool> ok(n, false);
  for (size_t i = 0; i < n; ++i) {
    CUDA_CHECK(cudaEventCreate(&start[i]));
    CUDA_CHECK(cudaEventCreate(&stop[i]));
    if (!run(i)) continue;  // warm-up, outside the window
    CUDA_CHECK(cudaEventRecord(start[i], s));
    ok[i] = true;
    for (int r = 0; r < runs && ok[i]; ++r) ok[i] = run(i);
    CUDA_CHECK(cudaEventRecord(stop[i], s));
  }
  CUDA_CHECK(cudaStreamSynchronize(s));
  for (size_t i = 0; i < n; ++i) {
    if (ok[i]) {
      CUDA_CHECK(cudaEventElapsedTime(&ms[i], start[i], stop[i]));
      ms[i] /= runs;
    }
    CUDA_CHECK(cudaEventDestroy(start[i]));
    CUDA_CHECK(cudaEventDestroy(stop[i]));
  }
  return ms;
}

}  // namespace gpuscope::gpt
