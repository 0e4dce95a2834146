// AdamW with bias correction and decoupled weight decay; fp32 master weights, moments and
// gradients. In bf16 runs the update also refreshes the bf16 compute copy of the weights.
//
// Per-tensor (--optimizer per-tensor): for each parameter tensor of each layer, separate kernels
// for the first moment, the second moment, the weight update and (bf16) the cast, the way an
// unfused framework optimizer issues them: about 4 launches per tensor. Fused: one kernel over
// the whole flat parameter buffer.
#pragma once

#include "gpt/layers/common.cuh"

namespace gpuscope::gpt {

struct AdamWHyper {
  float lr, beta1, beta2, eps, weight_decay;
  float c1, c2;  // bias corrections 1 - beta^t
};

__device__ __forceinline__ void AdamWElement(float& p, float& m, float& v, float g, const AdamWHyper& h) {
  m = h.beta1 * m + (1.f - h.beta1) * g;
  v = h.beta2 * v + (1.f - h.beta2) * g * g;
  p -= h.lr * ((m / h.c1) / (sqrtf(v / h.c2) + h.eps) + h.weight_decay * p);
}

// Four elements per thread with 16-byte loads and stores (every buffer is its own cudaMalloc,
// so 256-byte aligned), then the n % 4 tail one by one.
template <class T>
__global__ void AdamWFusedKernel(float* p, T* p_copy, const float* g, float* m, float* v, size_t n, AdamWHyper h) {
  struct alignas(4 * sizeof(T)) Copy4 {
    T x[4];
  };
  const size_t stride = size_t(gridDim.x) * blockDim.x, first = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  const size_t n4 = n / 4;
  for (size_t i = first; i < n4; i += stride) {
    const float4 gi = reinterpret_cast<const float4*>(g)[i];
    float4 pi = reinterpret_cast<const float4*>(p)[i];
    float4 mi = reinterpret_cast<const float4*>(m)[i];
    float4 vi = reinterpret_cast<const float4*>(v)[i];
    AdamWElement(pi.x, mi.x, vi.x, gi.x, h);
    AdamWElement(pi.y, mi.y, vi.y, gi.y, h);
    AdamWElement(pi.z, mi.z, vi.z, gi.z, h);
    AdamWElement(pi.w, mi.w, vi.w, gi.w, h);
    reinterpret_cast<float4*>(p)[i] = pi;
    reinterpret_cast<float4*>(m)[i] = mi;
    reinterpret_cast<float4*>(v)[i] = vi;
    if (p_copy)
      reinterpret_cast<Copy4*>(p_copy)[i] = Copy4{{FromF<T>(pi.x), FromF<T>(pi.y), FromF<T>(pi.z), FromF<T>(pi.w)}};
  }
  for (size_t i = 4 * n4 + first; i < n; i += stride) {
    float pi = p[i], mi = m[i], vi = v[i];
    AdamWElement(pi, mi, vi, g[i], h);
    p[i] = pi, m[i] = mi, v[i] = vi;
    if (p_copy) p_copy[i] = FromF<T>(pi);
  }
}

__global__ void AdamFirstMomentKernel(float* m, const float* g, size_t n, float beta1) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) m[i] = beta1 * m[i] + (1.f - beta1) * g[i];
}
__global__ void AdamSecondMomentKernel(float* v, const float* g, size_t n, float beta2) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) v[i] = beta2 * v[i] + (1.f - beta2) * g[i] * g[i];
}
__global__ void AdamUpdateKernel(float* p, const float* m, const float* v, size_t n, AdamWHyper h) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] -= h.lr * ((m[i] / h.c1) / (sqrtf(v[i] / h.c2) + h.eps) + h.weight_decay * p[i]);
}

}  // namespace gpuscope::gpt
