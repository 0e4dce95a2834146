// Softmax cross-entropy over the first V of Vp logits per row, and the mean-loss reduction.
//
// Fused (--kernels fused): one block per row computes max, sum, the loss, and overwrites the
// logits with dlogits = (softmax − onehot)·dloss in the same kernel (forward and backward in one
// pass, as llm.c's fused classifier does). Unfused: softmax into a probs buffer, a loss kernel,
// and (in the backward pass) a separate gradient kernel.
#pragma once

#include "gpt/layers/common.cuh"

namespace gpuscope::gpt {

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
__global__ inline void MeanLossKernel(float* out, const float* losses, int rows) {
  __shared__ float scratch[32];
  float s = 0.f;
  for (int i = threadIdx.x; i < rows; i += blockDim.x) s += losses[i];
  s = BlockReduce(s, scratch, false);
  if (threadIdx.x == 0) *out = s / rows;
}

template <class T>
void FusedClassifier(T* logits, float* losses, const int* targets, int rows, int V, int Vp, cudaStream_t s) {
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
