// GELU (tanh approximation), bias add, residual add and accumulate, bias gradient, casts.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/cuda_util.h"
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

// dbias[o] += Σ_r dout[r, o]. Fallback for shapes the tiled kernel below does not take
// (OC·sizeof(T) not a multiple of 16 bytes, or dout not 16-byte aligned). Block (32, 8): 32
// adjacent columns (coalesced), 8 row lanes; gridDim.y splits the rows, partial sums meet in one
// fp32 atomic per column per block.
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

namespace bias_grad {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kUnroll = 4;                  // 16-byte loads in flight per thread
constexpr int kRowStep = kWarps * kUnroll;  // rows one loop iteration of a block covers
constexpr int kBlocksPerSm = 4;             // grid target: 4 × 256 threads per SM, one wave

// Columns in 16 bytes of T (8 bf16, 4 float) and in one block's strip (one 16-byte vector per lane).
template <class T>
constexpr int kVec = 16 / int(sizeof(T));
template <class T>
constexpr int kStrip = 32 * kVec<T>;

template <class T>
__device__ __forceinline__ void AccumulateVec16(float (&acc)[kVec<T>], const uint4& u) {
  if constexpr (std::is_same_v<T, float>) {
    acc[0] += __uint_as_float(u.x), acc[1] += __uint_as_float(u.y);
    acc[2] += __uint_as_float(u.z), acc[3] += __uint_as_float(u.w);
  } else {
    // A bf16 is the top half of the fp32 with the same bits; element 2i is the low half of word i.
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      acc[2 * i] += __uint_as_float(w[i] << 16);
      acc[2 * i + 1] += __uint_as_float(w[i] & 0xffff0000u);
    }
  }
}

// Block (kThreads) reduces rows [blockIdx.y·rows_per_block, +rows_per_block) of the column strip
// [blockIdx.x·kStrip, +kStrip): lane l of every warp owns columns strip + l·kVec .. +kVec-1 and
// reads them with one 16-byte load per row (a warp reads 512 contiguous bytes of one row); warp w
// takes rows w, w + kWarps, ...; the kWarps partial sums meet in shared memory and each column
// gets one fp32 atomicAdd per block. Requires OC % kVec == 0 and a 16-byte-aligned dout, so that
// a lane's vector is either entirely inside the row or entirely past OC.
template <class T>
__global__ void __launch_bounds__(kThreads)
    BiasBackwardTiledKernel(float* dbias, const T* dout, int rows, int OC, int rows_per_block) {
  constexpr int kN = kVec<T>;
  __shared__ float part[kWarps][kStrip<T>];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int strip = blockIdx.x * kStrip<T>;
  const int col = strip + lane * kN;
  const int r0 = blockIdx.y * rows_per_block, r1 = min(rows, r0 + rows_per_block);
  float acc[kN] = {};
  if (col < OC) {
    for (int r = r0 + warp; r < r1; r += kRowStep) {
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int rr = r + u * kWarps;
        v[u] = rr < r1 ? __ldg(reinterpret_cast<const uint4*>(dout + size_t(rr) * OC + col)) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) AccumulateVec16<T>(acc, v[u]);
    }
  }
#pragma unroll
  for (int k = 0; k < kN; ++k) part[warp][lane * kN + k] = acc[k];
  __syncthreads();
  for (int c = threadIdx.x; c < kStrip<T>; c += kThreads) {
    if (strip + c >= OC) continue;
    float t = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) t += part[w][c];
    atomicAdd(&dbias[strip + c], t);
  }
}

}  // namespace bias_grad

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
// dbias (OC fp32, accumulated into) += column sums of dout (rows, OC). Tiled kernel: grid
// (strips of kStrip columns) × (row tiles), about kBlocksPerSm blocks per SM in total, each tile a
// multiple of kRowStep rows; fp32 atomics make the last bits depend on block order, as in the
// fallback and the other gradient kernels (layernorm, encoder).
template <class T>
void BiasBackward(float* dbias, const T* dout, int rows, int OC, cudaStream_t s) {
  if (rows <= 0 || OC <= 0) return;
  if (OC % bias_grad::kVec<T> != 0 || reinterpret_cast<uintptr_t>(dout) % 16 != 0) {
    dim3 grid(CeilDiv(OC, 32), std::max(1, std::min(64, rows / 256)));
    BiasBackwardKernel<<<grid, dim3(32, 8), 0, s>>>(dbias, dout, rows, OC);
    return;
  }
  static const int sms = workloads::SmCount();
  const int strips = CeilDiv(OC, bias_grad::kStrip<T>);
  const int tiles =
      std::clamp(CeilDiv(size_t(sms) * bias_grad::kBlocksPerSm, strips), 1, CeilDiv(rows, bias_grad::kRowStep));
  const int rows_per_block = CeilDiv(CeilDiv(rows, tiles), bias_grad::kRowStep) * bias_grad::kRowStep;
  const dim3 grid(strips, CeilDiv(rows, rows_per_block));
  bias_grad::BiasBackwardTiledKernel<T><<<grid, bias_grad::kThreads, 0, s>>>(dbias, dout, rows, OC, rows_per_block);
}
template <class T>
void Cast(T* out, const float* in, size_t n, cudaStream_t s) {
  CastKernel<<<CeilDiv(n, 256), 256, 0, s>>>(out, in, n);
}

}  // namespace gpuscope::gpt
