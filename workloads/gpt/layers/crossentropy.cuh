// Softmax cross-entropy over the first V of Vp logits per row, and the mean-loss reduction.
//
// Fused (--kernels fused): one block per row computes max, sum, the loss, and overwrites the
// logits with dlogits = (softmax − onehot)·dloss in the same kernel (forward and backward in one
// launch, as llm.c's fused classifier does). The main fused kernel stages the whole row in shared
// memory (one global read, one global write per logit); the original kernel, which reads the row
// three times from global memory with scalar loads, stays as the fallback for rows that do not
// fit or are not 16-byte aligned. Unfused: softmax into a probs buffer, a loss kernel, and (in the
// backward pass) a separate gradient kernel.
//
// Contract of both fused kernels: logits (rows, Vp) row-major; targets[r] in [0, V); losses[r] =
// logsumexp(logits[r, :V]) − logits[r, target]; dlogits[r, i] = (softmax_i − [i == target])·dloss
// for i < V and exactly 0 for the padding columns V..Vp-1 (whatever the padding logits hold).
#pragma once

#include <cstdint>
#include <cstdio>

#include "common/cuda_util.h"
#include "gpt/layers/common.cuh"

namespace gpuscope::gpt {

// Fallback fused kernel (three scalar passes over the row in global memory).
template <class T>
__global__ void FusedClassifierKernel(T* logits, float* losses, const int* targets, int V, int Vp, float dloss) {
  __shared__ float scratch[32];
  T* l = logits + size_t(blockIdx.x) * Vp;
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, ToF(l[i]));
  mx = BlockReduce(mx, scratch, true);
  float sum = 0.f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) sum += expf(ToF(l[i]) - mx);
  sum = BlockReduce(sum, scratch, false);
  const int target = targets[blockIdx.x];
  const float lt = ToF(l[target]);  // read before anyone overwrites it
  __syncthreads();
  if (threadIdx.x == 0) losses[blockIdx.x] = logf(sum) + mx - lt;
  const float inv = 1.f / sum;
  for (int i = threadIdx.x; i < Vp; i += blockDim.x) {
    const float p = i < V ? expf(ToF(l[i]) - mx) * inv : 0.f;
    l[i] = FromF<T>(i < V ? (p - (i == target ? 1.f : 0.f)) * dloss : 0.f);
  }
}

namespace classifier {

constexpr int kThreads = 512;
constexpr float kLog2e = 1.4426950408889634f;

// 16 bytes of storage type T as fp32 values: 4 floats or 8 bf16. A bf16 is the top half of the
// fp32 with the same bits, so unpacking is a shift; packing rounds to nearest even
// (__floats2bfloat162_rn, the rounding of FromF).
template <class T>
struct Vec16;
template <>
struct Vec16<float> {
  static constexpr int kN = 4;
  __device__ static __forceinline__ void Unpack(const uint4& u, float (&f)[kN]) {
    f[0] = __uint_as_float(u.x), f[1] = __uint_as_float(u.y), f[2] = __uint_as_float(u.z), f[3] = __uint_as_float(u.w);
  }
  __device__ static __forceinline__ uint4 Pack(const float (&f)[kN]) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
  }
};
template <>
struct Vec16<__nv_bfloat16> {
  static constexpr int kN = 8;
  __device__ static __forceinline__ void Unpack2(uint32_t w, float& lo, float& hi) {
    lo = __uint_as_float(w << 16);  // element 2i sits in the low half (little-endian)
    hi = __uint_as_float(w & 0xffff0000u);
  }
  __device__ static __forceinline__ uint32_t Pack2(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return (uint32_t(__bfloat16_as_ushort(h.y)) << 16) | __bfloat16_as_ushort(h.x);
  }
  __device__ static __forceinline__ void Unpack(const uint4& u, float (&f)[kN]) {
    Unpack2(u.x, f[0], f[1]), Unpack2(u.y, f[2], f[3]), Unpack2(u.z, f[4], f[5]), Unpack2(u.w, f[6], f[7]);
  }
  __device__ static __forceinline__ uint4 Pack(const float (&f)[kN]) {
    return make_uint4(Pack2(f[0], f[1]), Pack2(f[2], f[3]), Pack2(f[4], f[5]), Pack2(f[6], f[7]));
  }
};

__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem) {
  asm volatile(
      "cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(smem))),
      "l"(gmem)
      : "memory");
}
__device__ __forceinline__ void CpAsyncWaitAll() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// The 16-byte vector v of the staged row as fp32, padding columns (>= V) replaced by −inf so that
// they drop out of the max and contribute exp(−inf) = 0 to the sum. full_vecs = V / kN: vectors
// below it lie entirely inside the vocabulary.
template <class T>
__device__ __forceinline__ void LoadStaged(const uint4* row, int v, int V, int full_vecs, float (&x)[Vec16<T>::kN]) {
  constexpr int kN = Vec16<T>::kN;
  Vec16<T>::Unpack(row[v], x);
  if (v >= full_vecs) {
#pragma unroll
    for (int k = 0; k < kN; ++k)
      if (v * kN + k >= V) x[k] = -INFINITY;
  }
}

// One block of kThreads per row. The row (Vp·sizeof(T) bytes, dynamic shared memory) is copied in
// with 16-byte cp.async, then three sweeps over shared memory: max, Σ exp(x − max) (two block
// reductions), and dlogits written back to global with 16-byte stores. exp(x − m) is computed as
// exp2(x·log2e − m·log2e) (one FMA and one MUFU.EX2; relative error ~1e-6, as expf's).
// Requires Vp % kN == 0 and a 16-byte-aligned logits pointer (checked by FusedClassifier).
// __launch_bounds__(.., 2): two blocks per SM for bf16 GPT-2 (2 × 100.6 KB of the 228 KB), so
// one block's copy-in overlaps the other's compute.
template <class T>
__global__ void __launch_bounds__(kThreads, 2)
    FusedClassifierStagedKernel(T* logits, float* losses, const int* targets, int V, int Vp, float dloss) {
  using Vec = Vec16<T>;
  constexpr int kN = Vec::kN;
  extern __shared__ uint4 row[];  // Vp / kN vectors
  __shared__ float scratch[32];
  const int nvec = Vp / kN, full_vecs = V / kN;
  uint4* g = reinterpret_cast<uint4*>(logits + size_t(blockIdx.x) * Vp);
  for (int v = threadIdx.x; v < nvec; v += kThreads) CpAsync16(row + v, g + v);
  CpAsyncWaitAll();
  __syncthreads();  // every thread's copies visible to the whole block

  float mx = -INFINITY;
  for (int v = threadIdx.x; v < nvec; v += kThreads) {
    float x[kN];
    LoadStaged<T>(row, v, V, full_vecs, x);
#pragma unroll
    for (int k = 0; k < kN; ++k) mx = fmaxf(mx, x[k]);
  }
  mx = BlockReduce(mx, scratch, true);
  const float mx_log2 = mx * kLog2e;
  float sum = 0.f;
  for (int v = threadIdx.x; v < nvec; v += kThreads) {
    float x[kN];
    LoadStaged<T>(row, v, V, full_vecs, x);
#pragma unroll
    for (int k = 0; k < kN; ++k) sum += exp2f(fmaf(x[k], kLog2e, -mx_log2));
  }
  sum = BlockReduce(sum, scratch, false);
  const int target = targets[blockIdx.x];
  if (threadIdx.x == 0) losses[blockIdx.x] = logf(sum) + mx - ToF(reinterpret_cast<const T*>(row)[target]);
  const float inv = 1.f / sum;
  for (int v = threadIdx.x; v < nvec; v += kThreads) {
    float x[kN];
    Vec::Unpack(row[v], x);
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const float p = exp2f(fmaf(x[k], kLog2e, -mx_log2)) * inv;
      x[k] = (p - (v * kN + k == target ? 1.f : 0.f)) * dloss;
    }
    if (v >= full_vecs) {
#pragma unroll
      for (int k = 0; k < kN; ++k)
        if (v * kN + k >= V) x[k] = 0.f;
    }
    g[v] = Vec::Pack(x);
  }
}

// Dynamic shared memory the staged kernel may take (bytes), set up once per T: the opt-in
// maximum less the kernel's static shared memory, with the carveout preferring shared memory so
// that two bf16 GPT-2 rows fit per SM.
template <class T>
size_t StagedSmemLimit() {
  static const size_t limit = [] {
    int dev = 0, optin = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    cudaFuncAttributes attr{};
    CUDA_CHECK(cudaFuncGetAttributes(&attr, FusedClassifierStagedKernel<T>));
    const int dyn = optin - static_cast<int>(attr.sharedSizeBytes);
    CUDA_CHECK(cudaFuncSetAttribute(FusedClassifierStagedKernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn));
    CUDA_CHECK(cudaFuncSetAttribute(FusedClassifierStagedKernel<T>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    cudaSharedmemCarveoutMaxShared));
    return static_cast<size_t>(dyn);
  }();
  return limit;
}

}  // namespace classifier

template <class T>
__global__ void SoftmaxRowsKernel(T* probs, const T* logits, int V, int Vp) {
  __shared__ float scratch[32];
  const T* l = logits + size_t(blockIdx.x) * Vp;
  T* p = probs + size_t(blockIdx.x) * Vp;
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, ToF(l[i]));
  mx = BlockReduce(mx, scratch, true);
  float sum = 0.f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) sum += expf(ToF(l[i]) - mx);
  const float inv = 1.f / BlockReduce(sum, scratch, false);
  for (int i = threadIdx.x; i < Vp; i += blockDim.x) p[i] = FromF<T>(i < V ? expf(ToF(l[i]) - mx) * inv : 0.f);
}

template <class T>
__global__ void CrossEntropyLossKernel(float* losses, const T* probs, const int* targets, int rows, int Vp) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) losses[r] = -logf(ToF(probs[size_t(r) * Vp + targets[r]]));
}

template <class T>
__global__ void CrossEntropyBackwardKernel(T* dlogits, const T* probs, const int* targets, int rows, int V, int Vp,
                                           float dloss) {
  const size_t idx = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (idx >= size_t(rows) * Vp) return;
  const int r = int(idx / Vp), i = int(idx % Vp);
  dlogits[idx] = FromF<T>(i < V ? (ToF(probs[idx]) - (i == targets[r] ? 1.f : 0.f)) * dloss : 0.f);
}

// out[0] = mean of losses (one block, deterministic order).
__global__ void MeanLossKernel(float* out, const float* losses, int rows) {
  __shared__ float scratch[32];
  float s = 0.f;
  for (int i = threadIdx.x; i < rows; i += blockDim.x) s += losses[i];
  s = BlockReduce(s, scratch, false);
  if (threadIdx.x == 0) *out = s / rows;
}

// Staged kernel (grid rows × 512 threads, Vp·sizeof(T) bytes of dynamic shared memory) when the
// row is 16-byte vectorisable and fits in shared memory; else the three-pass fallback.
template <class T>
void FusedClassifier(T* logits, float* losses, const int* targets, int rows, int V, int Vp, cudaStream_t s) {
  constexpr int kN = classifier::Vec16<T>::kN;
  const size_t smem_bytes = size_t(Vp) * sizeof(T);
  const bool staged =
      Vp % kN == 0 && reinterpret_cast<uintptr_t>(logits) % 16 == 0 && smem_bytes <= classifier::StagedSmemLimit<T>();
  if (staged) {
    classifier::FusedClassifierStagedKernel<T>
        <<<rows, classifier::kThreads, smem_bytes, s>>>(logits, losses, targets, V, Vp, 1.f / rows);
    return;
  }
  static bool noted = false;
  if (!noted) {
    std::fprintf(stderr,
                 "FusedClassifier: Vp=%d (%zu B per row) is not staged in shared memory; using the "
                 "three-pass kernel\n",
                 Vp, smem_bytes);
    noted = true;
  }
  FusedClassifierKernel<<<rows, 512, 0, s>>>(logits, losses, targets, V, Vp, 1.f / rows);
}
template <class T>
void SoftmaxRows(T* probs, const T* logits, int rows, int V, int Vp, cudaStream_t s) {
  SoftmaxRowsKernel<<<rows, 512, 0, s>>>(probs, logits, V, Vp);
}
template <class T>
void CrossEntropyLoss(float* losses, const T* probs, const int* targets, int rows, int Vp, cudaStream_t s) {
  CrossEntropyLossKernel<<<CeilDiv(rows, 256), 256, 0, s>>>(losses, probs, targets, rows, Vp);
}
template <class T>
void CrossEntropyBackward(T* dlogits, const T* probs, const int* targets, int rows, int V, int Vp, cudaStream_t s) {
  const size_t n = size_t(rows) * Vp;
  CrossEntropyBackwardKernel<<<CeilDiv(n, 256), 256, 0, s>>>(dlogits, probs, targets, rows, V, Vp, 1.f / rows);
}
inline void MeanLoss(float* out, const float* losses, int rows, cudaStream_t s) {
  MeanLossKernel<<<1, 1024, 0, s>>>(out, losses, rows);
}

}  // namespace gpuscope::gpt
