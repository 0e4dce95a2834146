// Token + position embedding. Forward: out[b,t,:] = wte[inp[b,t],:] + wpe[t,:].
// Backward accumulates into the fp32 gradients with atomics (a token can repeat in a batch).
#pragma once

#include "gpt/layers/common.cuh"

namespace gpuscope::gpt {

template <class T>
__global__ void EncoderForwardKernel(T* out, const int* inp, const T* wte, const T* wpe, int BT, int seq, int C) {
  const size_t idx = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (idx >= size_t(BT) * C) return;
  const int bt = int(idx / C), c = int(idx % C), t = bt % seq;
  out[idx] = FromF<T>(ToF(wte[size_t(inp[bt]) * C + c]) + ToF(wpe[size_t(t) * C + c]));
}

template <class T>
__global__ void EncoderBackwardKernel(float* dwte, float* dwpe, const T* dout, const int* inp, int BT, int seq, int C) {
  const size_t idx = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (idx >= size_t(BT) * C) return;
  const int bt = int(idx / C), c = int(idx % C), t = bt % seq;
  const float d = ToF(dout[idx]);
  atomicAdd(&dwte[size_t(inp[bt]) * C + c], d);
  atomicAdd(&dwpe[size_t(t) * C + c], d);
}

template <class T>
void EncoderForward(T* out, const int* inp, const T* wte, const T* wpe, int B, int seq, int C, cudaStream_t s) {
  const size_t n = size_t(B) * seq * C;
  EncoderForwardKernel<<<CeilDiv(n, 256), 256, 0, s>>>(out, inp, wte, wpe, B * seq, seq, C);
}

template <class T>
void EncoderBackward(float* dwte, float* dwpe, const T* dout, const int* inp, int B, int seq, int C, cudaStream_t s) {
  const size_t n = size_t(B) * seq * C;
  EncoderBackwardKernel<<<CeilDiv(n, 256), 256, 0, s>>>(dwte, dwpe, dout, inp, B * seq, seq, C);
}

}  // namespace gpuscope::gpt
