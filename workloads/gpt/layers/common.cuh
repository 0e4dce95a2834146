// Helpers shared by the GPT layers: float <-> storage type conversion and warp / block reductions
// (device), and timing of equivalent candidates for autotuning (host). Storage type T is float or
// __nv_bfloat16; arithmetic is always fp32.
#pragma once

#include <algorithm>

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
template <class T>
__device__ __forceinline__ T FromF(float x);
template <>
__device__ __forceinline__ float FromF<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromF<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}

template <class T>
constexpr cudaDataType_t CudaType() {
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
// (that candidate's time is then +inf). Each candidate gets one warm-up run, then `rounds` rounds
// each time every candidate once between CUDA events, and a candidate's time is its median over
// the rounds. Interleaving matters on a GPU whose clock drifts while it tunes (power and heat
// after the first heavy kernels): timing candidates one after another favoured whichever ran
// earlier, and the LM head's choice changed by 6% from run to run (H200, 2026-11-30).
// One synchronisation at the end.
template <class Run>
std::vector<float> TimeCandidates(size_t n, int rounds, cudaStream_t s, Run&& run) {
  std::vector<float> ms(n, INFINITY);
  std::vector<bool> ok(n, false);
  for (size_t i = 0; i < n; ++i) ok[i] = run(i);  // warm-up; a candidate that cannot run is out
  std::vector<cudaEvent_t> ev(2 * n * rounds);
  for (auto& e : ev) CUDA_CHECK(cudaEventCreate(&e));
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < n; ++i) {
      if (!ok[i]) continue;
      CUDA_CHECK(cudaEventRecord(ev[2 * (r * n + i)], s));
      ok[i] = run(i);
      CUDA_CHECK(cudaEventRecord(ev[2 * (r * n + i) + 1], s));
    }
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<float> t(rounds);
  for (size_t i = 0; i < n; ++i) {
    if (!ok[i]) continue;
    for (int r = 0; r < rounds; ++r)
      CUDA_CHECK(cudaEventElapsedTime(&t[r], ev[2 * (r * n + i)], ev[2 * (r * n + i) + 1]));
    std::nth_element(t.begin(), t.begin() + rounds / 2, t.end());
    ms[i] = t[rounds / 2];
  }
  for (auto& e : ev) CUDA_CHECK(cudaEventDestroy(e));
  return ms;
}

}  // namespace gpuscope::gpt
