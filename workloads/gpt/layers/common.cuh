// Device helpers shared by the GPT layer kernels: float <-> storage type conversion and warp /
// block reductions. Storage type T is float or __nv_bfloat16; arithmetic is always fp32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>

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

}  // namespace gpuscope::gpt
