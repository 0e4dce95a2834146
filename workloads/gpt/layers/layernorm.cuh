// LayerNorm over rows of C (eps 1e-5, biased variance), one warp per row, fp32 statistics.
// The fused variant also adds the residual: res = a + b; out = LN(res), in one pass.
// Backward: dinp written or accumulated (kAccumulate), dweight/dbias accumulated into fp32
// through per-block shared-memory sums and one atomic per channel per block.
#pragma once

#include <algorithm>

#include "gpt/layers/common.cuh"

namespace gpuscope::gpt {

template <class T>
__global__ void LayerNormForwardKernel(T* out, float* mean, float* rstd, const T* inp, const T* w,
                                       const T* b, int rows, int C) {
  const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* x = inp + size_t(row) * C;
  float s = 0.f;
  for (int i = lane; i < C; i += 32) s += ToF(x[i]);
  const float m = WarpSum(s) / C;
  float v = 0.f;
  for (int i = lane; i < C; i += 32) {
    const float d = ToF(x[i]) - m;
    v += d * d;
  }
  const float r = rsqrtf(WarpSum(v) / C + 1e-5f);
  T* o = out + size_t(row) * C;
  for (int i = lane; i < C; i += 32) o[i] = FromF<T>((ToF(x[i]) - m) * r * ToF(w[i]) + ToF(b[i]));
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

template <class T>
__global__ void ResidualLayerNormForwardKernel(T* res, T* out, float* mean, float* rstd, const T* a,
                                               const T* bb, const T* w, const T* b, int rows, int C) {
  const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const size_t base = size_t(row) * C;
  float s = 0.f;
  for (int i = lane; i < C; i += 32) {
    // Normalise the value as stored, so forward and backward see the same residual.
    const T r = FromF<T>(ToF(a[base + i]) + ToF(bb[base + i]));
    res[base + i] = r;
    s += ToF(r);
  }
  const float m = WarpSum(s) / C;
  float v = 0.f;
  for (int i = lane; i < C; i += 32) {  // each lane rereads only what it wrote
    const float d = ToF(res[base + i]) - m;
    v += d * d;
  }
  const float r = rsqrtf(WarpSum(v) / C + 1e-5f);
  for (int i = lane; i < C; i += 32)
    out[base + i] = FromF<T>((ToF(res[base + i]) - m) * r * ToF(w[i]) + ToF(b[i]));
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

template <class T, bool kAccumulate>
__global__ void LayerNormBackwardKernel(T* dinp, float* dw, float* db, const T* dout, const T* inp, const T* w,
                                        const float* mean, const float* rstd, int rows, int C) {
  extern __shared__ float sh[];  // 2*C floats: dw then db partial sums of this block
  float* sdw = sh;
  float* sdb = sh + C;
  for (int i = threadIdx.x; i < 2 * C; i += blockDim.x) sh[i] = 0.f;
  __syncthreads();
  const int wpb = blockDim.x / 32, wid = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int row = blockIdx.x * wpb + wid; row < rows; row += gridDim.x * wpb) {
    const T* x = inp + size_t(row) * C;
    const T* d = dout + size_t(row) * C;
    T* dx = dinp + size_t(row) * C;
    const float m = mean[row], r = rstd[row];
    float a1 = 0.f, a2 = 0.f;
    for (int i = lane; i < C; i += 32) {
      const float norm = (ToF(x[i]) - m) * r, dn = ToF(w[i]) * ToF(d[i]);
      a1 += dn;
      a2 += dn * norm;
    }
    a1 = WarpSum(a1) / C;
    a2 = WarpSum(a2) / C;
    for (int i = lane; i < C; i += 32) {
      const float di = ToF(d[i]), norm = (ToF(x[i]) - m) * r, dn = ToF(w[i]) * di;
      atomicAdd(&sdb[i], di);
      atomicAdd(&sdw[i], norm * di);
      const float g = r * (dn - a1 - norm * a2);
      dx[i] = FromF<T>(kAccumulate ? ToF(dx[i]) + g : g);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < C; i += blockDim.x) {
    atomicAdd(&dw[i], sdw[i]);
    atomicAdd(&db[i], sdb[i]);
  }
}

template <class T>
void LayerNormForward(T* out, float* mean, float* rstd, const T* inp, const T* w, const T* b, int rows, int C,
                      cudaStream_t s) {
  LayerNormForwardKernel<<<CeilDiv(size_t(rows) * 32, 256), 256, 0, s>>>(out, mean, rstd, inp, w, b, rows, C);
}

template <class T>
void ResidualLayerNormForward(T* res, T* out, float* mean, float* rstd, const T* a, const T* bb, const T* w,
                              const T* b, int rows, int C, cudaStream_t s) {
  ResidualLayerNormForwardKernel<<<CeilDiv(size_t(rows) * 32, 256), 256, 0, s>>>(res, out, mean, rstd, a, bb, w, b,
                                                                                 rows, C);
}

template <class T>
void LayerNormBackward(T* dinp, float* dw, float* db, const T* dout, const T* inp, const T* w, const float* mean,
                       const float* rstd, int rows, int C, bool accumulate, int sms, cudaStream_t s) {
  const int threads = 256, wpb = threads / 32;
  const int blocks = std::min(CeilDiv(rows, wpb), 2 * sms);
  const size_t smem = 2 * size_t(C) * sizeof(float);
  if (accumulate)
    LayerNormBackwardKernel<T, true><<<blocks, threads, smem, s>>>(dinp, dw, db, dout, inp, w, mean, rstd, rows, C);
  else
    LayerNormBackwardKernel<T, false><<<blocks, threads, smem, s>>>(dinp, dw, db, dout, inp, w, mean, rstd, rows, C);
}

}  // namespace gpuscope::gpt
