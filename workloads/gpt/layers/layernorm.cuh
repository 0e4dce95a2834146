// LayerNorm over rows of C (eps 1e-5, biased variance), one warp per row, fp32 statistics.
// The fused variant also adds the residual: res = a + b; out = LN(res), in one pass.
// Backward: dinp written or accumulated (kAccumulate), dweight/dbias accumulated into fp32.
//
// Two implementations with the same contract:
// - Vectorised (LnVec*Kernel), taken when C is a multiple of 16 bytes' worth of T, C <= 2048 and
//   every row tensor and dweight/dbias is 16-byte aligned (cudaMalloc'ed buffers with C a
//   multiple of 128 always are). Each lane holds its share of the row in registers as 16-byte
//   vectors (8 bf16 or 4 float), so every tensor is read once and written once.
//   Forward: one row per warp, 8 warps per block, as many blocks as rows / 8.
//   Backward: persistent, at most one block per SM (16 warps when the registers allow, as for
//   bf16 with C <= 768; else 8); each warp walks rows with a grid stride, prefetching its next
//   row into L2, and keeps per-lane fp32 dweight/dbias partials in registers (a lane owns the
//   same columns in every row). At the end the block sums its warps through shared memory and
//   adds one 16-byte atomic per 4 columns to the global gradients.
// - Scalar (the kernels below without "Vec"): any C, for shapes the vectorised path refuses.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "gpt/layers/common.cuh"

namespace gpuscope::gpt {

// ---- Scalar path (any C) ----

template <class T>
__global__ void LayerNormForwardKernel(T* out, float* mean, float* rstd, const T* inp, const T* w, const T* b, int rows,
                                       int C) {
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
__global__ void ResidualLayerNormForwardKernel(T* res, T* out, float* mean, float* rstd, const T* a, const T* bb,
                                               const T* w, const T* b, int rows, int C) {
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
  for (int i = lane; i < C; i += 32) out[base + i] = FromF<T>((ToF(res[base + i]) - m) * r * ToF(w[i]) + ToF(b[i]));
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

// ---- Vectorised path ----

// Largest row length the vectorised kernels take (registers hold C / 32 elements per lane).
constexpr int kLnVecMaxC = 2048;
constexpr int kLnFwdThreads = 256;  // 8 rows per block, one per warp

// 16 bytes of T: one vectorised load or store. The pointer must be 16-byte aligned.
template <class T>
struct alignas(16) LnPack {
  static constexpr int kN = 16 / sizeof(T);
  T v[kN];
  __device__ __forceinline__ static LnPack Load(const T* p) {
    LnPack r;
    *reinterpret_cast<uint4*>(r.v) = *reinterpret_cast<const uint4*>(p);
    return r;
  }
  __device__ __forceinline__ void Store(T* p) const {
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(v);
  }
};

// Column of element 0 of vector j of `lane`: vector j of the 32 lanes covers the 32 * kN
// consecutive columns [j * 32 * kN, (j + 1) * 32 * kN). Columns at or past C are not touched.
template <class T>
__device__ __forceinline__ int LnCol(int j, int lane) {
  return (j * 32 + lane) * LnPack<T>::kN;
}

// Threads per block of the vectorised backward: 16 warps when the estimated registers per
// thread (two fp32 accumulators per element, plus x, dout, dinp and w held packed, plus ~24 for
// addresses and temporaries) fit the 128 that 512 threads on one SM allow; else 8 warps.
template <class T, int kVecs>
__host__ __device__ constexpr int LnBackwardThreads() {
  constexpr int kElems = kVecs * LnPack<T>::kN;
  constexpr int kRegs = 2 * kElems + 4 * kElems * int(sizeof(T)) / 4 + 24;
  return kRegs <= 128 ? 512 : 256;
}

// An empty asm that claims to modify the pack's registers: values computed from the pack before
// it cannot be reused after it, so the compiler recomputes them from the 16 packed bytes instead
// of keeping the fp32 values live (for bf16, twice the registers).
template <class T>
__device__ __forceinline__ void LnOpaque(LnPack<T>& p) {
  unsigned* u = reinterpret_cast<unsigned*>(p.v);
#pragma unroll
  for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(u[i]));
}

// Asks L2 to fetch the `bytes` bytes at p (a hint: no registers are held while the lines are in
// flight, and nothing changes if the lines are evicted before use). Lanes take 128-byte lines.
__device__ __forceinline__ void LnPrefetchL2(const void* p, int bytes, int lane) {
#if defined(__CUDA_ARCH__)
  for (int off = lane * 128; off < bytes; off += 32 * 128)
    asm volatile("prefetch.L2 [%0];" ::"l"(static_cast<const char*>(p) + off));
#endif
}

__device__ __forceinline__ void LnAtomicAdd4(float* p, float4 v) {  // p 16-byte aligned
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float4*>(p), v);  // one vector red (sm_90+, global memory only)
#else
  atomicAdd(p, v.x);
  atomicAdd(p + 1, v.y);
  atomicAdd(p + 2, v.z);
  atomicAdd(p + 3, v.w);
#endif
}

// Forward, one warp per row. kResidual: res = a + bb (rounded to T, stored), normalise res;
// else normalise a (res and bb unused). kVecs 16-byte vectors per lane cover C.
template <class T, int kVecs, bool kResidual>
__global__ void __launch_bounds__(kLnFwdThreads)
    LnVecForwardKernel(T* res, T* out, float* mean, float* rstd, const T* a, const T* bb, const T* w, const T* b,
                       int rows, int C) {
  using P = LnPack<T>;
  constexpr int kN = P::kN;
  const int row = blockIdx.x * (kLnFwdThreads / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;  // warp-uniform: the shuffles below see all 32 lanes
  const size_t base = size_t(row) * C;
  // Every load is issued before the first store: the callers never alias res or out with an
  // input, but the compiler cannot know that, and a load after a store would wait for it.
  P x[kVecs], y[kVecs], wv[kVecs], bv[kVecs];
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int c = LnCol<T>(j, lane);
    if (c < C) {
      x[j] = P::Load(a + base + c);
      if constexpr (kResidual) y[j] = P::Load(bb + base + c);
      wv[j] = P::Load(w + c);
      bv[j] = P::Load(b + c);
    }
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int c = LnCol<T>(j, lane);
    if (c < C) {
      if constexpr (kResidual) {
        // Normalise the value as stored, so forward and backward see the same residual.
#pragma unroll
        for (int k = 0; k < kN; ++k) x[j].v[k] = FromF<T>(ToF(x[j].v[k]) + ToF(y[j].v[k]));
        x[j].Store(res + base + c);
      }
#pragma unroll
      for (int k = 0; k < kN; ++k) s += ToF(x[j].v[k]);
    }
  }
  const float m = WarpSum(s) / C;
  float var = 0.f;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    if (LnCol<T>(j, lane) < C) {
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        const float d = ToF(x[j].v[k]) - m;
        var += d * d;
      }
    }
  }
  const float r = rsqrtf(WarpSum(var) / C + 1e-5f);
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int c = LnCol<T>(j, lane);
    if (c < C) {
      P o;
#pragma unroll
      for (int k = 0; k < kN; ++k) o.v[k] = FromF<T>((ToF(x[j].v[k]) - m) * r * ToF(wv[j].v[k]) + ToF(bv[j].v[k]));
      o.Store(out + base + c);
    }
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

// Backward. Each warp takes rows blockIdx.x * warps + warp, then every gridDim.x * warps rows
// on; a lane owns the same columns in every row, so its dweight/dbias partials stay in
// registers. At the end the block sums its warps' partials, 32 * kN columns at a time, in
// shared memory, and adds them to dw/db with one 16-byte atomic per 4 columns.
template <class T, int kVecs, bool kAccumulate>
__global__ void __launch_bounds__(LnBackwardThreads<T, kVecs>(), 1)
    LnVecBackwardKernel(T* dinp, float* dw, float* db, const T* dout, const T* inp, const T* w, const float* mean,
                        const float* rstd, int rows, int C) {
  using P = LnPack<T>;
  constexpr int kN = P::kN, kWarps = LnBackwardThreads<T, kVecs>() / 32, kChunk4 = 32 * kN / 4;
  // [warp][0: dweight, 1: dbias][float4 of the chunk's columns]
  __shared__ float4 part[kWarps][2][kChunk4];
  const int wid = threadIdx.x / 32, lane = threadIdx.x % 32;

  float acc_dw[kVecs][kN], acc_db[kVecs][kN];
  P wv[kVecs];
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
#pragma unroll
    for (int k = 0; k < kN; ++k) acc_dw[j][k] = acc_db[j][k] = 0.f;
    if (LnCol<T>(j, lane) < C) wv[j] = P::Load(w + LnCol<T>(j, lane));
  }

  const int stride = gridDim.x * kWarps;
  for (int row = blockIdx.x * kWarps + wid; row < rows; row += stride) {
    const size_t base = size_t(row) * C;
    // The warp's next row into L2 while this one is processed: only one row per warp is held in
    // registers, and the prefetch keeps DRAM busy through this row's reductions and stores.
    if (row + stride < rows) {
      const size_t next = base + size_t(stride) * C;
      const int bytes = C * int(sizeof(T));
      LnPrefetchL2(inp + next, bytes, lane);
      LnPrefetchL2(dout + next, bytes, lane);
      if constexpr (kAccumulate) LnPrefetchL2(dinp + next, bytes, lane);
    }
    const float m = mean[row], r = rstd[row];
    // All loads of the row before its stores (see the forward).
    P xv[kVecs], dv[kVecs], gv[kVecs];
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      const int c = LnCol<T>(j, lane);
      if (c < C) {
        xv[j] = P::Load(inp + base + c);
        dv[j] = P::Load(dout + base + c);
        if constexpr (kAccumulate) gv[j] = P::Load(dinp + base + c);
      }
    }
    float a1 = 0.f, a2 = 0.f;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      if (LnCol<T>(j, lane) < C) {
#pragma unroll
        for (int k = 0; k < kN; ++k) {
          const float norm = (ToF(xv[j].v[k]) - m) * r, dn = ToF(wv[j].v[k]) * ToF(dv[j].v[k]);
          a1 += dn;
          a2 += dn * norm;
        }
      }
    }
    a1 = WarpSum(a1) / C;
    a2 = WarpSum(a2) / C;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      const int c = LnCol<T>(j, lane);
      if (c < C) {
        LnOpaque(xv[j]);
        LnOpaque(dv[j]);
        LnOpaque(wv[j]);
        P o;
#pragma unroll
        for (int k = 0; k < kN; ++k) {
          const float di = ToF(dv[j].v[k]), norm = (ToF(xv[j].v[k]) - m) * r, dn = ToF(wv[j].v[k]) * di;
          acc_db[j][k] += di;
          acc_dw[j][k] += norm * di;
          const float g = r * (dn - a1 - norm * a2);
          if constexpr (kAccumulate)
            o.v[k] = FromF<T>(ToF(gv[j].v[k]) + g);
          else
            o.v[k] = FromF<T>(g);
        }
        o.Store(dinp + base + c);
      }
    }
  }

#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    if (j * 32 * kN >= C) continue;  // block-uniform, so the barriers below are safe
      // Lane's kN columns of chunk j are float4s lane * kN / 4 ... (lanes past C hold zeros).
#pragma unroll
    for (int q = 0; q < kN / 4; ++q) {
      part[wid][0][lane * (kN / 4) + q] =
          make_float4(acc_dw[j][4 * q], acc_dw[j][4 * q + 1], acc_dw[j][4 * q + 2], acc_dw[j][4 * q + 3]);
      part[wid][1][lane * (kN / 4) + q] =
          make_float4(acc_db[j][4 * q], acc_db[j][4 * q + 1], acc_db[j][4 * q + 2], acc_db[j][4 * q + 3]);
    }
    __syncthreads();
    for (int e = threadIdx.x; e < 2 * kChunk4; e += blockDim.x) {
      const int which = e / kChunk4, q = e % kChunk4;
      const int c = j * 32 * kN + 4 * q;  // C is a multiple of kN (>= 4): c < C covers c + 3
      if (c >= C) continue;
      float4 sum = part[0][which][q];
#pragma unroll
      for (int wp = 1; wp < kWarps; ++wp) {
        const float4 t = part[wp][which][q];
        sum.x += t.x;
        sum.y += t.y;
        sum.z += t.z;
        sum.w += t.w;
      }
      LnAtomicAdd4((which == 0 ? dw : db) + c, sum);
    }
    __syncthreads();  // before the next chunk overwrites part
  }
}

// Calls f(std::integral_constant<int, V>{}) with the smallest V of the instantiated set such that
// V 16-byte vectors per lane cover a row of C elements. False (f not called) when none does.
template <class T, class F>
bool LnDispatchVecs(int C, F&& f) {
  constexpr int kPerVec = 32 * LnPack<T>::kN;  // columns one vector per lane covers
  const int need = (C + kPerVec - 1) / kPerVec;
  if (need <= 1) return f(std::integral_constant<int, 1>{}), true;
  if (need <= 2) return f(std::integral_constant<int, 2>{}), true;
  if (need <= 3) return f(std::integral_constant<int, 3>{}), true;
  if (need <= 4) return f(std::integral_constant<int, 4>{}), true;
  if (need <= 6) return f(std::integral_constant<int, 6>{}), true;
  if (need <= 8) return f(std::integral_constant<int, 8>{}), true;
  if constexpr (kLnVecMaxC / kPerVec > 8) {  // float: C up to 2048 needs up to 16 vectors
    if (need <= 12) return f(std::integral_constant<int, 12>{}), true;
    if (need <= 16) return f(std::integral_constant<int, 16>{}), true;
  }
  return false;
}

// Whether the vectorised kernels may run: rows of whole 16-byte vectors, C within the register
// budget, every pointer given 16-byte aligned.
template <class T>
bool LnVectorisable(int C, std::initializer_list<const void*> ptrs) {
  if (C <= 0 || C % LnPack<T>::kN != 0 || C > kLnVecMaxC) return false;
  for (const void* p : ptrs)
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return false;
  return true;
}

template <class T>
void LayerNormForward(T* out, float* mean, float* rstd, const T* inp, const T* w, const T* b, int rows, int C,
                      cudaStream_t s) {
  if (rows <= 0) return;
  const bool vec = LnVectorisable<T>(C, {out, inp, w, b}) && LnDispatchVecs<T>(C, [&](auto vecs) {
                     LnVecForwardKernel<T, decltype(vecs)::value, false>
                         <<<CeilDiv(size_t(rows), kLnFwdThreads / 32), kLnFwdThreads, 0, s>>>(
                             nullptr, out, mean, rstd, inp, nullptr, w, b, rows, C);
                   });
  if (!vec) LayerNormForwardKernel<<<CeilDiv(size_t(rows) * 32, 256), 256, 0, s>>>(out, mean, rstd, inp, w, b, rows, C);
}

template <class T>
void ResidualLayerNormForward(T* res, T* out, float* mean, float* rstd, const T* a, const T* bb, const T* w, const T* b,
                              int rows, int C, cudaStream_t s) {
  if (rows <= 0) return;
  const bool vec = LnVectorisable<T>(C, {res, out, a, bb, w, b}) && LnDispatchVecs<T>(C, [&](auto vecs) {
                     LnVecForwardKernel<T, decltype(vecs)::value, true>
                         <<<CeilDiv(size_t(rows), kLnFwdThreads / 32), kLnFwdThreads, 0, s>>>(res, out, mean, rstd, a,
                                                                                              bb, w, b, rows, C);
                   });
  if (!vec)
    ResidualLayerNormForwardKernel<<<CeilDiv(size_t(rows) * 32, 256), 256, 0, s>>>(res, out, mean, rstd, a, bb, w, b,
                                                                                   rows, C);
}

// `sms`: multiprocessors of the device. The vectorised backward launches at most one block per
// SM (bf16 with C = 768: 16 warps of up to 128 registers fill the register file), so each warp
// visits about rows / (sms * warps) rows and the global atomics are one per 4 columns per SM.
template <class T>
void LayerNormBackward(T* dinp, float* dw, float* db, const T* dout, const T* inp, const T* w, const float* mean,
                       const float* rstd, int rows, int C, bool accumulate, int sms, cudaStream_t s) {
  if (rows <= 0) return;
  const bool vec = LnVectorisable<T>(C, {dinp, dw, db, dout, inp, w}) && LnDispatchVecs<T>(C, [&](auto vecs) {
                     constexpr int kVecs = decltype(vecs)::value, kThreads = LnBackwardThreads<T, kVecs>();
                     const int blocks = std::min(CeilDiv(size_t(rows), kThreads / 32), std::max(sms, 1));
                     if (accumulate)
                       LnVecBackwardKernel<T, kVecs, true>
                           <<<blocks, kThreads, 0, s>>>(dinp, dw, db, dout, inp, w, mean, rstd, rows, C);
                     else
                       LnVecBackwardKernel<T, kVecs, false>
                           <<<blocks, kThreads, 0, s>>>(dinp, dw, db, dout, inp, w, mean, rstd, rows, C);
                   });
  if (vec) return;
  const int threads = 256, wpb = threads / 32;
  const int blocks = std::min(CeilDiv(rows, wpb), 2 * sms);
  const size_t smem = 2 * size_t(C) * sizeof(float);
  if (accumulate)
    LayerNormBackwardKernel<T, true><<<blocks, threads, smem, s>>>(dinp, dw, db, dout, inp, w, mean, rstd, rows, C);
  else
    LayerNormBackwardKernel<T, false><<<blocks, threads, smem, s>>>(dinp, dw, db, dout, inp, w, mean, rstd, rows, C);
}

}  // namespace gpuscope::gpt
