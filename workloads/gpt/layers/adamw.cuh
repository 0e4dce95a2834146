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

template <class T>
__global__ void AdamWFusedKernel(float* p, T* p_copy, const float* g, float* m, float* v, size_t n, AdamWHyper h) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = h.beta1 * m[i] + (1.f - h.beta1) * gi;
    const float vi = h.beta2 * v[i] + (1.f - h.beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float pi = p[i] - h.lr * ((mi / h.c1) / (sqrtf(vi / h.c2) + h.eps) + h.weight_decay * p[i]);
    p[i] = pi;
    if (p_copy) p_copy[i] = FromF<T>(pi);
  }
}

__global__ inline void AdamFirstMomentKernel(float* m, const float* g, size_t n, float beta1) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) m[i] = beta1 * m[i] + (1.f - beta1) * g[i];
}
__global__ inline void AdamSecondMomentKernel(float* v, const float* g, size_t n, float beta2) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) v[i] = beta2 * v[i] + (1.f - beta2) * g[i] * g[i];
}
__global__ inline void AdamUpdateKernel(float* p, const float* m, const float* v, size_t n, AdamWHyper h) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] -= h.lr * ((m[i] / h.c1) / (sqrtf(v[i] / h.c2) + h.eps) + h.weight_decay * p[i]);
}

}  // namespace gpuscope::gpt
