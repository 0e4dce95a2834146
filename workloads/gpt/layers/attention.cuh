// Causal multi-head self-attention, materialised (B, NH, T, T) scores, cuBLASLt batched GEMMs
// for QKᵀ and AV, own kernels for the permutes and the softmax.
//
// Layouts: qkv (B, T, 3, NH, HS) as produced by the QKV linear layer; q, k, v permuted to
// (B, NH, T, HS); att (B, NH, T, T) row-major, softmax probabilities, 0 above the diagonal.
//
// Unfused path (--kernels unfused): scores GEMM, then separate scale, causal-mask and softmax
// kernels (three passes over T² per head); backward: softmax backward, then a scale kernel.
// Fused path: the 1/sqrt(HS) scale rides in the GEMM's alpha, one causal-softmax kernel; backward
// in one kernel.
#pragma once

#include "gpt/layers/common.cuh"
#include "gpt/layers/matmul.cuh"

namespace gpuscope::gpt {

template <class T>
__global__ void PermuteKernel(T* q, T* k, T* v, const T* qkv, int B, int seq, int NH, int HS) {
  const size_t idx = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (idx >= size_t(B) * NH * seq * HS) return;
  const int i = idx % HS, t = (idx / HS) % seq, h = (idx / (size_t(HS) * seq)) % NH, b = idx / (size_t(HS) * seq * NH);
  const size_t C = size_t(NH) * HS;
  const size_t src = (size_t(b) * seq + t) * 3 * C + size_t(h) * HS + i;
  q[idx] = qkv[src];
  k[idx] = qkv[src + C];
  v[idx] = qkv[src + 2 * C];
}

template <class T>
__global__ void PermuteBackwardKernel(T* dqkv, const T* dq, const T* dk, const T* dv, int B, int seq, int NH, int HS) {
  const size_t idx = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (idx >= size_t(B) * NH * seq * HS) return;
  const int i = idx % HS, t = (idx / HS) % seq, h = (idx / (size_t(HS) * seq)) % NH, b = idx / (size_t(HS) * seq * NH);
  const size_t C = size_t(NH) * HS;
  const size_t dst = (size_t(b) * seq + t) * 3 * C + size_t(h) * HS + i;
  dqkv[dst] = dq[idx];
  dqkv[dst + C] = dk[idx];
  dqkv[dst + 2 * C] = dv[idx];
}

// y (B, NH, T, HS) → out (B, T, NH·HS); backward is the inverse gather.
template <class T, bool kBackward>
__global__ void UnpermuteKernel(T* dst, const T* src, int B, int seq, int NH, int HS) {
  const size_t idx = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (idx >= size_t(B) * NH * seq * HS) return;
  const int i = idx % HS, t = (idx / HS) % seq, h = (idx / (size_t(HS) * seq)) % NH, b = idx / (size_t(HS) * seq * NH);
  const size_t flat = (size_t(b) * seq + t) * NH * HS + size_t(h) * HS + i;
  if (kBackward)
    dst[idx] = src[flat];
  else
    dst[flat] = src[idx];
}

template <class T>
__global__ void ScaleKernel(T* x, size_t n, float s) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = FromF<T>(ToF(x[i]) * s);
}

// Sets entries above the diagonal of each (T, T) matrix to -inf.
template <class T>
__global__ void CausalMaskKernel(T* x, size_t n, int seq) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const int t2 = i % seq, t = (i / seq) % seq;
  if (t2 > t) x[i] = FromF<T>(-INFINITY);
}

// In place, one warp per row of length T. kCausal: only t2 <= t take part and the rest is
// written as 0; otherwise the whole row (masked entries are -inf and come out 0).
template <class T, bool kCausal>
__global__ void SoftmaxKernel(T* x, int rows, int seq) {
  const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = row % seq, n = kCausal ? t + 1 : seq;
  T* r = x + size_t(row) * seq;
  float mx = -INFINITY;
  for (int i = lane; i < n; i += 32) mx = fmaxf(mx, ToF(r[i]));
  mx = WarpMax(mx);
  float sum = 0.f;
  for (int i = lane; i < n; i += 32) sum += expf(ToF(r[i]) - mx);
  const float inv = 1.f / WarpSum(sum);
  for (int i = lane; i < seq; i += 32) r[i] = FromF<T>(i < n ? expf(ToF(r[i]) - mx) * inv : 0.f);
}

// In place: d (holding dL/datt on entry) becomes dL/dscores = scale · att ⊙ (datt − Σ att·datt).
template <class T, bool kCausal>
__global__ void SoftmaxBackwardKernel(T* d, const T* att, int rows, int seq, float scale) {
  const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = row % seq, n = kCausal ? t + 1 : seq;
  T* dr = d + size_t(row) * seq;
  const T* a = att + size_t(row) * seq;
  float dot = 0.f;
  for (int i = lane; i < n; i += 32) dot += ToF(a[i]) * ToF(dr[i]);
  dot = WarpSum(dot);
  for (int i = lane; i < seq; i += 32) {
    const float g = i < n ? ToF(a[i]) * (ToF(dr[i]) - dot) * scale : 0.f;
    dr[i] = FromF<T>(g);
  }
}

struct AttentionShape {
  int B, T, NH, HS;
  size_t qkv_elems() const { return size_t(B) * NH * T * HS; }  // one of q, k, v
  size_t att_elems() const { return size_t(B) * NH * T * T; }
};

// Batched GEMM over the B·NH heads; see matmul.cuh for the column-major mapping.
template <class T>
void HeadsGemm(Matmul& mm, bool ta, bool tb, int m, int n, int k, const T* a, int lda, long long sa, const T* b,
               int ldb, long long sb, T* d, int ldd, long long sd, int batch, float alpha, cudaStream_t s) {
  GemmArgs g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a;
  g.lda = lda;
  g.stride_a = sa;
  g.b = b;
  g.ldb = ldb;
  g.stride_b = sb;
  g.d = d;
  g.ldd = ldd;
  g.stride_d = sd;
  g.batch = batch;
  g.alpha = alpha;
  g.ab_type = g.d_type = CudaType<T>();
  mm.Run(g, s);
}

// out (B, T, C) from qkv; keeps q, k, v and att for the backward pass; y is scratch (B,NH,T,HS).
template <class T>
void AttentionForward(Matmul& mm, T* out, T* q, T* k, T* v, T* att, T* y, const T* qkv, const AttentionShape& sh,
                      bool fused, cudaStream_t s) {
  const int Tn = sh.T, HS = sh.HS, batch = sh.B * sh.NH, rows = batch * Tn;
  const long long sqk = (long long)Tn * HS, satt = (long long)Tn * Tn;
  const float scale = 1.f / sqrtf(float(HS));
  const size_t n = sh.qkv_elems(), na = sh.att_elems();
  PermuteKernel<<<CeilDiv(n, 256), 256, 0, s>>>(q, k, v, qkv, sh.B, Tn, sh.NH, HS);
  // scores[t][t2] = q[t]·k[t2]: m=T(t2), n=T(t), k=HS, A=k op T, B=q op N.
  HeadsGemm(mm, true, false, Tn, Tn, HS, k, HS, sqk, q, HS, sqk, att, Tn, satt, batch, fused ? scale : 1.f, s);
  if (fused) {
    SoftmaxKernel<T, true><<<CeilDiv(size_t(rows) * 32, 256), 256, 0, s>>>(att, rows, Tn);
  } else {
    ScaleKernel<<<CeilDiv(na, 256), 256, 0, s>>>(att, na, scale);
    CausalMaskKernel<<<CeilDiv(na, 256), 256, 0, s>>>(att, na, Tn);
    SoftmaxKernel<T, false><<<CeilDiv(size_t(rows) * 32, 256), 256, 0, s>>>(att, rows, Tn);
  }
  // y[t] = Σ att[t][t2] v[t2]: m=HS, n=T, k=T, A=v op N, B=att op N.
  HeadsGemm(mm, false, false, HS, Tn, Tn, v, HS, sqk, att, Tn, satt, y, HS, sqk, batch, 1.f, s);
  UnpermuteKernel<T, false><<<CeilDiv(n, 256), 256, 0, s>>>(out, y, sh.B, Tn, sh.NH, HS);
}

// dqkv (B, T, 3C) written (not accumulated). Scratch: dy, dq, dk, dv (B,NH,T,HS), datt (B,NH,T,T).
template <class T>
void AttentionBackward(Matmul& mm, T* dqkv, T* dy, T* dq, T* dk, T* dv, T* datt, const T* dout, const T* q, const T* k,
                       const T* v, const T* att, const AttentionShape& sh, bool fused, cudaStream_t s) {
  const int Tn = sh.T, HS = sh.HS, batch = sh.B * sh.NH, rows = batch * Tn;
  const long long sqk = (long long)Tn * HS, satt = (long long)Tn * Tn;
  const float scale = 1.f / sqrtf(float(HS));
  const size_t n = sh.qkv_elems(), na = sh.att_elems();
  UnpermuteKernel<T, true><<<CeilDiv(n, 256), 256, 0, s>>>(dy, dout, sh.B, Tn, sh.NH, HS);
  // datt[t][t2] = dy[t]·v[t2]: m=T, n=T, k=HS, A=v op T, B=dy op N.
  HeadsGemm(mm, true, false, Tn, Tn, HS, v, HS, sqk, dy, HS, sqk, datt, Tn, satt, batch, 1.f, s);
  // dv[t2] = Σ_t att[t][t2] dy[t]: m=HS, n=T, k=T, A=dy op N, B=att op T.
  HeadsGemm(mm, false, true, HS, Tn, Tn, dy, HS, sqk, att, Tn, satt, dv, HS, sqk, batch, 1.f, s);
  if (fused) {
    SoftmaxBackwardKernel<T, true><<<CeilDiv(size_t(rows) * 32, 256), 256, 0, s>>>(datt, att, rows, Tn, scale);
  } else {
    SoftmaxBackwardKernel<T, false><<<CeilDiv(size_t(rows) * 32, 256), 256, 0, s>>>(datt, att, rows, Tn, 1.f);
    ScaleKernel<<<CeilDiv(na, 256), 256, 0, s>>>(datt, na, scale);
  }
  // dq[t] = Σ_t2 ds[t][t2] k[t2]: m=HS, n=T, k=T, A=k op N, B=ds op N.
  HeadsGemm(mm, false, false, HS, Tn, Tn, k, HS, sqk, datt, Tn, satt, dq, HS, sqk, batch, 1.f, s);
  // dk[t2] = Σ_t ds[t][t2] q[t]: m=HS, n=T, k=T, A=q op N, B=ds op T.
  HeadsGemm(mm, false, true, HS, Tn, Tn, q, HS, sqk, datt, Tn, satt, dk, HS, sqk, batch, 1.f, s);
  PermuteBackwardKernel<<<CeilDiv(n, 256), 256, 0, s>>>(dqkv, dq, dk, dv, sh.B, Tn, sh.NH, HS);
}

}  // namespace gpuscope::gpt
