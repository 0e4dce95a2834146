// GELU (tanh approximation), bias add, residual add and accumulate, bias gradient, casts.
#pragma once

#include <algorithm>

#include "gpt/layers/common.cuh"

namespace gpuscope::gpt {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

template <class T>
__global__ void GeluForwardKernel(T* out, const T* inp, size_t n) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float x = ToF(inp[i]);
  out[i] = FromF<T>(0.5f * x * (1.f + tanhf(kGeluScale * (x + 0.044715f * x * x * x))));
}

// dinp = dout * gelu'(inp) (written, not accumulated).
template <class T>
__global__ void GeluBackwardKernel(T* dinp, const T* inp, const T* dout, size_t n) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float x = ToF(inp[i]);
  const float th = tanhf(kGeluScale * (x + 0.044715f * x * x * x));
  const float du = kGeluScale * (1.f + 3.f * 0.044715f * x * x);
  dinp[i] = FromF<T>(ToF(dout[i]) * (0.5f * (1.f + th) + 0.5f * x * (1.f - th * th) * du));
}

// out[r, o] += bias[o], out is (rows, OC).
template <class T>
__global__ void BiasAddKernel(T* out, const T* bias, size_t n, int OC) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = FromF<T>(ToF(out[i]) + ToF(bias[i % OC]));
}

template <class T>
__global__ void ResidualAddKernel(T* out, const T* a, const T* b, size_t n) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = FromF<T>(ToF(a[i]) + ToF(b[i]));
}

template <class T>
__global__ void AccumulateKernel(T* acc, const T* x, size_t n) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) acc[i] = FromF<T>(ToF(acc[i]) + ToF(x[i]));
}

// dbias[o] += Σ_r dout[r, o]. Block (32, 8): 32 adjacent columns (coalesced), 8 row lanes;
// gridDim.y splits the rows, partial sums meet in one fp32 atomic per column per block.
template <class T>
__global__ void BiasBackwardKernel(float* dbias, const T* dout, int rows, int OC) {
  __shared__ float part[8][33];
  const int col = blockIdx.x * 32 + threadIdx.x;
  float s = 0.f;
  if (col < OC)
    for (int r = blockIdx.y * 8 + threadIdx.y; r < rows; r += gridDim.y * 8) s += ToF(dout[size_t(r) * OC + col]);
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < OC) {
    float t = 0.f;
    for (int k = 0; k < 8; ++k) t += part[k][threadIdx.x];
    atomicAdd(&dbias[col], t);
  }
}

template <class T>
__global__ void CastKernel(T* out, const float* in, size_t n) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = FromF<T>(in[i]);
}

template <class T>
void GeluForward(T* out, const T* inp, size_t n, cudaStream_t s) {
  GeluForwardKernel<<<CeilDiv(n, 256), 256, 0, s>>>(out, inp, n);
}
template <class T>
void GeluBackward(T* dinp, const T* inp, const T* dout, size_t n, cudaStream_t s) {
  GeluBackwardKernel<<<CeilDiv(n, 256), 256, 0, s>>>(dinp, inp, dout, n);
}
template <class T>
void BiasAdd(T* out, const T* bias, int rows, int OC, cudaStream_t s) {
  const size_t n = size_t(rows) * OC;
  BiasAddKernel<<<CeilDiv(n, 256), 256, 0, s>>>(out, bias, n, OC);
}
template <class T>
void ResidualAdd(T* out, const T* a, const T* b, size_t n, cudaStream_t s) {
  ResidualAddKernel<<<CeilDiv(n, 256), 256, 0, s>>>(out, a, b, n);
}
template <class T>
void Accumulate(T* acc, const T* x, size_t n, cudaStream_t s) {
  AccumulateKernel<<<CeilDiv(n, 256), 256, 0, s>>>(acc, x, n);
}
template <class T>
void BiasBackward(float* dbias, const T* dout, int rows, int OC, cudaStream_t s) {
  dim3 grid(CeilDiv(OC, 32), std::max(1, std::min(64, rows / 256)));
  BiasBackwardKernel<<<grid, dim3(32, 8), 0, s>>>(dbias, dout, rows, OC);
}
template <class T>
void Cast(T* out, const float* in, size_t n, cudaStream_t s) {
  CastKernel<<<CeilDiv(n, 256), 256, 0, s>>>(out, in, n);
}

}  // namespace gpuscope::gpt
