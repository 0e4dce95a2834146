// Causal multi-head self-attention without the (B, NH, T, T) score matrix: FlashAttention-2
// (Dao, 2023, arXiv:2307.08691) forward and backward for bf16, head size 64, on tensor cores
// through mma.sync.m16n8k16 (bf16 in, fp32 accumulate) with ldmatrix fragment loads, and on
// Hopper through wgmma.mma_async.m64n64k16 (warpgroup MMA, operands straight from shared memory).
//
// Contract
//   qkv  (B, T, 3, NH, HS) bf16, as the QKV linear layer writes it; q, k, v are read in place
//        through the row stride 3·NH·HS (no permute kernels).
//   out  (B, T, NH·HS) bf16, written.
//   lse  (B, NH, T) fp32, written by the forward: the natural-log logsumexp of each row of the
//        scaled, masked scores, ln Σ_{t2 <= t} exp(q_t·k_t2 / sqrt(HS)); read by the backward.
//   dqkv (B, T, 3, NH, HS) bf16, written (not accumulated).
//   scratch, backward: FlashBackwardScratchFloats(sh) floats = delta (B, NH, T), D = rowsum(dO ∘ O),
//        then the fused backward's fp32 dQ accumulator (B·NH·T·HS). Contents on entry ignored.
//   All pointers 16-byte aligned (cudaMalloc gives 256): tiles move in 16-byte copies.
//   Supported shapes: HS == 64 and T a multiple of 128 (FlashAttentionSupported); anything else
//   is the caller's to route to the materialised path (attention.cuh). The launchers exit with
//   a message on an unsupported shape, as the other layers do on a CUDA error.
//
// Design
//   The tile kernels use 4 warps (128 threads; 8 in one forward kernel); every warp owns 16 rows
//   (32 in two forward kernels) of
//   the block's tile in registers (accumulators and, mostly, its A fragments) and reads the
//   shared tile it multiplies with from shared memory. Shared tiles are 64 rows × 64 bf16
//   (128-byte rows), 16-byte chunk c of row r stored at chunk c ^ (r & 7), so that the eight row
//   addresses of an ldmatrix and the cp.async stores hit eight different bank groups. Tiles
//   stream from global memory with cp.async, two buffers deep: tile j+1 loads while tile j is
//   computed. Softmax arithmetic is in the log2 domain (exp2f with scores prescaled by
//   log2(e)/sqrt(HS)); lse is stored in natural-log units and converted back in the backward.
//
//   Forward (FlashForwardBlock): one block per (query tile, b·h); each warp owns 16 or 32
//   consecutive queries (one or two m16 tiles; with two, each K/V fragment read from shared
//   memory feeds two MMAs). Key tiles of 64 from 0 up to the diagonal; tiles entirely above the
//   diagonal for a warp are skipped, the diagonal ones masked elementwise. Online softmax:
//   running max m and sum l per row, O = acc / l, lse = (m + log2 l)·ln 2. Shared memory 32 KiB
//   (K, V ×2 buffers; the Q tile is staged through the second buffers before the loop). Four
//   kernels of that body (FlashForwardVariant): q128w4 (4 warps × 32 queries, the first one),
//   q128w4lpt (the same, all heads' heaviest query tiles dispatched first), q64w4lpt (4 warps ×
//   16 queries) and q128w8lpt (8 warps × 16 queries). Two more on wgmma (FlashForwardWgmmaBlock):
//   wg64lpt and wg128lpt, one or two warpgroups of 64 queries, the Q tile kept in shared memory
//   (41 or 49 KiB). FlashAttentionForward picks the fastest per shape at run time (timed on the
//   first call) unless GPUSCOPE_GPT_FLASH_FWD names one.
//
//   Backward, two implementations on mma.sync, each launched in two orders, and the fused one on
//   wgmma (FlashBackwardWgmmaBlock, below) in two builds (FlashBackwardPath: eight paths;
//   FlashAttentionBackward picks the fastest per shape at run time, timed on the first call,
//   unless GPUSCOPE_GPT_FLASH_BWD or its last argument names one). Both start with
//   FlashDeltaKernel: D = rowsum(dO ∘ O), 8 threads per (b, t, h) row. Both walk, per 64-key
//   tile, the 64-query tiles from the diagonal to the end; warp w owns keys 16w..16w+15 and keeps
//   dK, dV as fp32 accumulators in registers; per tile Sᵀ = K Qᵀ and dPᵀ = V dOᵀ,
//   Pᵀ = exp(Sᵀ·scale − lse), dSᵀ = Pᵀ ∘ (dPᵀ − D), then dV += Pᵀ dO and dK += dSᵀ Q. Working
//   transposed keeps Pᵀ and dSᵀ in registers as the A operands of those MMAs.
//   Fused (FlashBackwardBlock, FlashDqConvertKernel), FlashAttention-2's own scheme:
//     the same block also computes dQ for the query tile: its dSᵀ (64 keys × 64 queries) goes to
//     shared memory, warp w takes queries 16w..16w+15, dQ_part = dS K over the block's 64 keys,
//     and adds it with red.global.add.v4.f32 into the fp32 accumulator, which the delta kernel
//     zeroed. FlashDqConvertKernel then writes dQ·scale as bf16 into dqkv. 5 tile products per
//     tile pair; 16 KiB of fp32 reductions per pair; dQ's summation order varies from run to run
//     (not bitwise deterministic). Shared memory 58 KiB (dynamic): Q, dO ×2, K, V, dSᵀ, lse, D ×2.
//     Two builds of the block: 3 per SM (FlashBackwardKernel3, "fused") and 2 per SM
//     (FlashBackwardKernel2, "fused2").
//   Two-pass ("twopass"; FlashBackwardKvKernel, FlashBackwardQKernel): the
//     dK/dV kernel keeps K and V as A fragments in registers (shared memory 33 KiB: Q, dO ×2,
//     lse, D ×2); dQ is a separate kernel, parallel over 64-query tiles, that recomputes S and dP
//     (7 tile products per pair): per key tile up to the diagonal S = Q Kᵀ, dP = dO Vᵀ,
//     dS = P ∘ (dP − D), dQ += dS K. Shared memory 32 KiB (K, V ×2). No atomics, no fp32 dQ
//     buffer, deterministic.
//   Launch order: key tile kt of a head visits T/64 − kt query tiles (kt = 0 heaviest), query
//   tile qt of the two-pass dQ visits qt + 1 key tiles (the last heaviest). The kernels as first
//   written take grid (T / 64, B·NH), each head's heaviest tile first; the "_lpt" paths (each
//   kernel's kLpt = true instance, GridTile) take grid (B·NH, T / 64), the heaviest tiles of all
//   heads first, as the forward's q128w4lpt.
//   dK and dQ are scaled by 1/sqrt(HS) at the end (the gradient of the scaled scores).
//   Work is the causal half: only tile pairs at or below the diagonal are visited.
//   Wgmma backward ("wgmma3_lpt", "wgmma3f_lpt"): the fused algorithm with all five tile products
//   as warpgroup MMAs of the block's 4 warps; 3 blocks per SM, longest-first. See the comment at
//   FlashBackwardWgmmaBlock for why (shared-memory bandwidth) and what was tried.
//   ptxas (sm_90a, CUDA 13.0), registers: forward q128w4 and q128w4lpt 255 (2 blocks per SM),
//   q64w4lpt 151 (3 per SM; capped at 128 for 4 per SM it spills 12 bytes), q128w8lpt 151 (1 per
//   SM; capped at 128 for 2 per SM it spills 16 bytes); fused 168 (3 per SM build, 32 bytes of
//   spill, see FlashBackwardKernel3) and 183 (2 per SM build, no spills); two-pass dK/dV 240,
//   dQ 168; delta 23, dQ convert 18; each backward "_lpt" kernel as its first-written twin (the
//   same body; fused_lpt's 3 per SM build has the same 32 bytes of spill); wgmma forward 121
//   (wg64lpt, 4 blocks per SM) and 123 (wg128lpt, 2); wgmma backward 168 with 8 bytes of spill
//   (wgmma3_lpt) and 164 (wgmma3f_lpt); no other spills. So 3 or 2 fused backward blocks per SM,
//   2 and 3 two-pass blocks, 3 wgmma backward blocks.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "common/cuda_util.h"
#include "gpt/layers/attention.cuh"
#include "gpt/layers/common.cuh"

namespace gpuscope::gpt {

constexpr int kFlashHeadSize = 64;
// The forward's query tile; the backward's tiles (64) divide it.
constexpr int kFlashSeqMultiple = 128;

inline bool FlashAttentionSupported(const AttentionShape& sh) {
  return sh.HS == kFlashHeadSize && sh.T > 0 && sh.T % kFlashSeqMultiple == 0 && sh.B > 0 && sh.NH > 0 &&
         size_t(sh.B) * sh.NH <= 65535;  // b·h is gridDim.y
}

namespace flash {

using bf16 = __nv_bfloat16;

constexpr int kHs = kFlashHeadSize;
constexpr int kTile = 64;  // rows of one shared-memory tile; Bc everywhere, Br in the backward
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
static_assert(kHs == 64, "the fragment loops below assume a head size of 64 (four k16 steps, eight n8 tiles)");

// Element offset of (row, 16-byte chunk) in a swizzled 64 × 64 tile.
__device__ __forceinline__ int Swz(int row, int chunk) { return row * kHs + ((chunk ^ (row & 7)) << 3); }

__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(SmemAddr(smem)), "l"(gmem));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most n of this thread's committed groups are still in flight.
template <int n>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(n) : "memory");
}

// 64 rows × 64 bf16 from global (row r at src + r·row_stride elements) into a swizzled tile.
// blockDim.x == kNThreads: thread i copies chunk i % 8 of rows i / 8 + (kNThreads / 8)·j (a loop
// with a fixed trip count, so it unrolls without remainder code).
template <int kNThreads = kThreads>
__device__ __forceinline__ void LoadTile(bf16* dst, const bf16* src, size_t row_stride) {
  constexpr int kRowsPerPass = kNThreads / 8;
  static_assert(kTile % kRowsPerPass == 0, "a tile is a whole number of passes");
  const int r0 = threadIdx.x >> 3, c = threadIdx.x & 7;
  const bf16* s = src + r0 * row_stride + c * 8;
#pragma unroll
  for (int j = 0; j < kTile / kRowsPerPass; ++j) {
    const int r = r0 + j * kRowsPerPass;  // r & 7 == r0 & 7
    CpAsync16(dst + Swz(r, c), s + j * kRowsPerPass * row_stride);
  }
}
// 64 floats (256 bytes) into shared memory; threads 0..15 take part.
__device__ __forceinline__ void LoadRow64f(float* dst, const float* src) {
  if (threadIdx.x < 16) CpAsync16(dst + 4 * threadIdx.x, src + 4 * threadIdx.x);
}

// ldmatrix .x4: lanes 8i..8i+7 give the row addresses of 8×8 matrix i; register i receives
// matrix i, this lane holding (row lane/4, columns 2·(lane%4), +1); with .trans, the transpose
// ((rows 2·(lane%4), +1; column lane/4) of the matrix as stored).
__device__ __forceinline__ void Ldsm4(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddr(p)));
}
__device__ __forceinline__ void Ldsm4T(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddr(p)));
}

// d += a·b for one m16n8k16 tile (PTX ISA, "Matrix Fragments for mma.m16n8k16"): with
// g = lane/4, t = lane%4, A regs hold (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..);
// B regs hold (k 2t..2t+1, n g), (k 2t+8.., n g); C/D hold (g, 2t), (g, 2t+1), (g+8, 2t),
// (g+8, 2t+1). The lower column/k index sits in the low 16 bits of a register.
__device__ __forceinline__ void Mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<uint32_t*>(&v);
}

// The A fragment for k16 step kk from C fragments of n8 tiles 2kk and 2kk+1 of a 16 × 64
// product: the C layout of two adjacent n8 tiles is the A layout of one k16 step.
__device__ __forceinline__ void CToA(uint32_t (&a)[4], const float (&c0)[4], const float (&c1)[4]) {
  a[0] = PackBf16(c0[0], c0[1]);
  a[1] = PackBf16(c0[2], c0[3]);
  a[2] = PackBf16(c1[0], c1[1]);
  a[3] = PackBf16(c1[2], c1[3]);
}

// A fragments (16 rows from row0, all 64 columns as four k16 steps) of a swizzled tile whose
// rows are the M dimension.
__device__ __forceinline__ void LoadA(uint32_t (&a)[4][4], const bf16* tile, int row0, int lane) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) Ldsm4(a[kk], tile + Swz(row0 + (lane & 15), 2 * kk + (lane >> 4)));
}

// The dSᵀ tile of the fused backward: 64 rows (keys) × 64 bf16 (queries), padded to a row pitch
// of 72 elements (144 bytes) instead of swizzled, so that every address a thread uses is its
// base plus a constant (a swizzle's XOR would keep eight more addresses in registers). Word
// (row r, column 8n + 2t) is in bank (4r + 4n + t) mod 32: the eight rows × four words of a
// warp's fragment store, and the eight 16-byte rows of an ldmatrix, hit 32 different banks.
constexpr int kDsPitch = kHs + 8;

// A fragments (16 rows of M from column col0, all 64 rows of the tile as four k16 steps) of the
// padded dSᵀ tile, whose rows are the K dimension (keys) and columns M (queries): dS as the A
// operand. ldmatrix.trans of the 8 × 8 blocks (k 0-7, m 0-7), (k 0-7, m 8-15), (k 8-15, m 0-7),
// (k 8-15, m 8-15) gives regs 0..3 of the A layout. col0 is a multiple of 16.
__device__ __forceinline__ void LoadDsA(uint32_t (&a)[4][4], const bf16* ds, int col0, int lane) {
  const bf16* p = ds + ((lane & 7) + ((lane >> 4) << 3)) * kDsPitch + col0 + (((lane >> 3) & 1) << 3);
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) Ldsm4T(a[kk], p + 16 * kk * kDsPitch);
}

// *p += (x, y, z, w) as one fire-and-forget reduction in global memory (no return value, relaxed,
// gpu scope). The .v4.f32 form needs sm_90 and PTX ISA 8.1 (PTX ISA, "red"); p 16-byte aligned.
__device__ __forceinline__ void RedAddV4(float* p, float x, float y, float z, float w) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(x), "f"(y), "f"(z), "f"(w) : "memory");
}

// acc[mi] (16 × 64 each) += a[mi] (16 × 64) · B (64 × 64), one m16n8k16 MMA pair per k16 step kk
// and 16-column block n2; load_b(b, kk, n2) loads that step's B fragments (regs 0,1: columns
// 16·n2..+7; regs 2,3: columns +8), each feeding all kM MMAs. The four callers below differ only
// in how they address the shared tile.
template <int kM, class LoadB>
__device__ __forceinline__ void MmaTiles(float (&acc)[kM][8][4], const uint32_t (&a)[kM][4][4], LoadB load_b) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
    for (int n2 = 0; n2 < 4; ++n2) {
      uint32_t b[4];
      load_b(b, kk, n2);
#pragma unroll
      for (int mi = 0; mi < kM; ++mi) {
        Mma(acc[mi][2 * n2], a[mi][kk], b[0], b[1]);
        Mma(acc[mi][2 * n2 + 1], a[mi][kk], b[2], b[3]);
      }
    }
  }
}

// acc[16 × 64] += A[16 × 64] · tileᵀ, the tile's rows being the N dimension (B = tileᵀ): S = Q Kᵀ
// with K's rows as keys. b regs 0,1: rows n0..n0+7, k 0-7 / 8-15; regs 2,3: rows n0+8..n0+15.
template <int kM>
__device__ __forceinline__ void MmaABt(float (&acc)[kM][8][4], const uint32_t (&a)[kM][4][4], const bf16* tile,
                                       int lane) {
  MmaTiles(acc, a, [&](uint32_t(&b)[4], int kk, int n2) {
    Ldsm4(b, tile + Swz(16 * n2 + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1)));
  });
}

// acc[16 × 64] += A[16 × 64] · tile, the tile's rows being the K dimension: O += P V with V's rows
// as keys. ldmatrix.trans: regs 0,1 = k 0-7 / 8-15 of columns n0..n0+7; regs 2,3 = columns +8.
template <int kM>
__device__ __forceinline__ void MmaAB(float (&acc)[kM][8][4], const uint32_t (&a)[kM][4][4], const bf16* tile,
                                      int lane) {
  MmaTiles(acc, a, [&](uint32_t(&b)[4], int kk, int n2) {
    Ldsm4T(b, tile + Swz(16 * kk + (lane & 15), 2 * n2 + (lane >> 4)));
  });
}

template <int kM>
__device__ __forceinline__ void Zero(float (&x)[kM][8][4]) {
#pragma unroll
  for (int mi = 0; mi < kM; ++mi)
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) x[mi][n][e] = 0.f;
}

// Writes a warp's 16 × 64 fp32 accumulator, times `mul` per row half (rows g, g+8), as bf16 to
// rows row0.. of a global matrix with the given row stride (elements).
__device__ __forceinline__ void StoreRows(bf16* dst, size_t row_stride, int row0, const float (&acc)[8][4], float mul0,
                                          float mul1, int lane) {
  const int g = lane >> 2, t = lane & 3;
  bf16* r0 = dst + size_t(row0 + g) * row_stride;
  bf16* r1 = dst + size_t(row0 + g + 8) * row_stride;
#pragma unroll
  for (int n = 0; n < 8; ++n) {
    const int col = 8 * n + 2 * t;
    *reinterpret_cast<__nv_bfloat162*>(r0 + col) = __floats2bfloat162_rn(acc[n][0] * mul0, acc[n][1] * mul0);
    *reinterpret_cast<__nv_bfloat162*>(r1 + col) = __floats2bfloat162_rn(acc[n][2] * mul1, acc[n][3] * mul1);
  }
}

// ldmatrix .x4 (.trans) from a shared-state-space byte address (Ldsm4, Ldsm4T).
__device__ __forceinline__ void Ldsm4At(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void Ldsm4TAt(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// MmaABt and MmaAB with this lane's ldmatrix addresses as (tile base) + (one of four offsets) +
// (a constant), so that a loop over tiles keeps 8 offsets live instead of up to 32 swizzled
// addresses (what lets the one-m-tile forward fit 128 registers without spilling). The swizzle
// XOR only touches the 16-byte chunk bits: with r7 = row & 7 (= lane & 7 for both patterns) and
// c ∈ {0, 1}, ((2i + c) ^ r7) << 4 == ((c ^ r7) << 4) ^ (i << 5).
//   MmaABt (rows 16·n2 + rl, rl = (lane & 7) + 8·(lane >> 4); chunk 2kk + ((lane >> 3) & 1)):
//     byte offset = koff[kk] + 2048·n2, koff[kk] = 128·rl + ((((lane >> 3) & 1) ^ r7) << 4) ^ (kk << 5).
//   MmaAB (rows 16·kk + (lane & 15); chunk 2·n2 + (lane >> 4)):
//     byte offset = voff[n2] + 2048·kk, voff[n2] = 128·(lane & 15) + (((lane >> 4) ^ r7) << 4) ^ (n2 << 5).
struct FragOffsets {
  uint32_t k[4], v[4];
};
__device__ __forceinline__ FragOffsets MakeFragOffsets(int lane) {
  FragOffsets o;
  const uint32_t r7 = lane & 7, rl = (lane & 7) + ((lane >> 4) << 3);
#pragma unroll
  for (uint32_t i = 0; i < 4; ++i) {
    o.k[i] = 128 * rl + (((((lane >> 3) & 1) ^ r7) << 4) ^ (i << 5));
    o.v[i] = 128 * (lane & 15) + ((((lane >> 4) ^ r7) << 4) ^ (i << 5));
  }
  return o;
}
constexpr uint32_t kRow16Bytes = 16 * kHs * sizeof(bf16);  // 16 rows of a tile: 2048 bytes

template <int kM>
__device__ __forceinline__ void MmaABtAt(float (&acc)[kM][8][4], const uint32_t (&a)[kM][4][4], uint32_t tile,
                                         const FragOffsets& o) {
  MmaTiles(acc, a, [&](uint32_t(&b)[4], int kk, int n2) { Ldsm4At(b, tile + o.k[kk] + n2 * kRow16Bytes); });
}
template <int kM>
__device__ __forceinline__ void MmaABAt(float (&acc)[kM][8][4], const uint32_t (&a)[kM][4][4], uint32_t tile,
                                        const FragOffsets& o) {
  MmaTiles(acc, a, [&](uint32_t(&b)[4], int kk, int n2) { Ldsm4TAt(b, tile + o.v[n2] + kk * kRow16Bytes); });
}

// One key tile of the forward's online softmax for a warp's kM m16 tiles of queries (rows
// qrow0 + 16·mi + g, + 8): s holds the raw scores Q·Kᵀ of key tile k0 (C layout); scales them to
// the log2 domain, masks keys above the diagonal when `masked`, updates the running max m and sum
// l, rescales acc, and leaves P as the A fragments pf of the P·V product.
template <int kM>
__device__ __forceinline__ void OnlineSoftmaxTile(float (&s)[kM][8][4], float (&m)[kM][2], float (&l)[kM][2],
                                                  float (&acc)[kM][8][4], uint32_t (&pf)[kM][4][4], bool masked, int k0,
                                                  int qrow0, int lane, float scale_log2) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mi = 0; mi < kM; ++mi) {
    float mx[2] = {m[mi][0], m[mi][1]};
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[mi][n][e] * scale_log2;
        if (masked) {
          const int key = k0 + 8 * n + 2 * t + (e & 1);
          const int query = qrow0 + 16 * mi + g + 8 * (e >> 1);
          if (key > query) x = -INFINITY;
        }
        s[mi][n][e] = x;
        mx[e >> 1] = fmaxf(mx[e >> 1], x);
      }
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(0xffffffffu, mx[hh], 1));
      mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(0xffffffffu, mx[hh], 2));
    }
    float alpha[2], sum[2] = {0.f, 0.f}, mref[2];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      mref[hh] = mx[hh] == -INFINITY ? 0.f : mx[hh];  // a row with no key yet: keep p = 0, no NaN
      alpha[hh] = exp2f(m[mi][hh] - mref[hh]);
      m[mi][hh] = mx[hh];
    }
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = exp2f(s[mi][n][e] - mref[e >> 1]);
        s[mi][n][e] = p;
        sum[e >> 1] += p;
        acc[mi][n][e] *= alpha[e >> 1];
      }
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) l[mi][hh] = l[mi][hh] * alpha[hh] + sum[hh];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) CToA(pf[mi][kk], s[mi][2 * kk], s[mi][2 * kk + 1]);
  }
}

// The forward's output for a warp's kM m16 tiles of queries from qrow0 of head bh: out = acc / l
// (bf16), lse = (m + log2 l)·ln 2.
template <int kM>
__device__ __forceinline__ void ForwardEpilogue(bf16* __restrict__ out, float* __restrict__ lse,
                                                const float (&acc)[kM][8][4], const float (&m)[kM][2],
                                                float (&l)[kM][2], int T, int NH, int bh, int qrow0, int lane) {
  const int g = lane >> 2, t = lane & 3, b = bh / NH, h = bh % NH;
  const size_t out_stride = size_t(NH) * kHs;
  bf16* out_g = out + size_t(b) * T * out_stride + size_t(h) * kHs;
  float* lse_g = lse + size_t(bh) * T;
#pragma unroll
  for (int mi = 0; mi < kM; ++mi) {
    float inv[2];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      l[mi][hh] += __shfl_xor_sync(0xffffffffu, l[mi][hh], 1);
      l[mi][hh] += __shfl_xor_sync(0xffffffffu, l[mi][hh], 2);
      inv[hh] = 1.f / l[mi][hh];
    }
    const int row0 = qrow0 + 16 * mi;
    StoreRows(out_g, out_stride, row0, acc[mi], inv[0], inv[1], lane);
    if (t == 0) {
      lse_g[row0 + g] = (m[mi][0] + log2f(l[mi][0])) * kLn2;
      lse_g[row0 + g + 8] = (m[mi][1] + log2f(l[mi][1])) * kLn2;
    }
  }
}

// The forward for query tile qt of head bh: kNW warps (blockDim.x == 32·kNW), warp w owning the
// kM m16 tiles of queries q0 + 16·kM·w .. + 16·kM − 1, so kBr = 16·kNW·kM queries per block; all
// warps share each K/V tile in shared memory. Every variant computes each row the same way (the
// same key tiles in the same order, the same MMA and softmax sequence per accumulator), so out
// and lse are expected to be bitwise equal across variants (flash_test checks each against the
// references); only the work per block and the registers per thread differ.
template <int kNW, int kM>
__device__ __forceinline__ void FlashForwardBlock(bf16* __restrict__ out, float* __restrict__ lse,
                                                  const bf16* __restrict__ qkv, int T, int NH, float scale_log2, int qt,
                                                  int bh) {
  constexpr int kNT = 32 * kNW, kBr = 16 * kNW * kM;
  static_assert(kBr == kTile || kBr == 2 * kTile, "the Q tile is staged through one or both second K/V buffers");
  static_assert(kFlashSeqMultiple % kBr == 0, "FlashAttentionSupported's T must be a whole number of query tiles");
  __shared__ __align__(128) bf16 sK[2][kTile * kHs];
  __shared__ __align__(128) bf16 sV[2][kTile * kHs];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int b = bh / NH, h = bh % NH;
  const int C = NH * kHs, q0 = qt * kBr;
  const size_t stride = 3 * size_t(C);
  const bf16* q_g = qkv + size_t(b) * T * stride + size_t(h) * kHs;
  const bf16* k_g = q_g + C;
  const bf16* v_g = q_g + 2 * C;

  // The Q tile (kBr rows: 64 in sK[1], rows 64..127 in sV[1]) is staged through the second K and
  // V buffers.
  LoadTile<kNT>(sK[1], q_g + size_t(q0) * stride, stride);
  if constexpr (kBr == 2 * kTile) LoadTile<kNT>(sV[1], q_g + size_t(q0 + kTile) * stride, stride);
  LoadTile<kNT>(sK[0], k_g, stride);
  LoadTile<kNT>(sV[0], v_g, stride);
  CpAsyncCommit();
  CpAsyncWait<0>();
  __syncthreads();
  const int wrow0 = warp * 16 * kM;  // this warp's first query, relative to q0
  [[maybe_unused]] const FragOffsets fo = MakeFragOffsets(lane);
  uint32_t qf[kM][4][4];
#pragma unroll
  for (int mi = 0; mi < kM; ++mi) {
    const int r = wrow0 + 16 * mi;
    LoadA(qf[mi], r < kTile ? sK[1] : sV[1], r % kTile, lane);
  }
  __syncthreads();  // the staging buffers are refilled below

  float acc[kM][8][4];
  Zero(acc);
  float m[kM][2], l[kM][2];  // per row half (g, g+8): running max (log2 units), partial sum
#pragma unroll
  for (int mi = 0; mi < kM; ++mi) m[mi][0] = m[mi][1] = -INFINITY, l[mi][0] = l[mi][1] = 0.f;

  const int n_kt = (q0 + kBr) / kTile;
  for (int j = 0; j < n_kt; ++j) {
    const int buf = j & 1;
    // One barrier per tile: key tile j (loaded before the loop or in iteration j − 1) is complete
    // for every thread, and every warp is done with iteration j − 1, which read buffer buf ^ 1;
    // tile j + 1 then loads into it while tile j is computed.
    if (j > 0) {
      CpAsyncWait<0>();
      __syncthreads();
    }
    if (j + 1 < n_kt) {
      LoadTile<kNT>(sK[buf ^ 1], k_g + size_t(j + 1) * kTile * stride, stride);
      LoadTile<kNT>(sV[buf ^ 1], v_g + size_t(j + 1) * kTile * stride, stride);
      CpAsyncCommit();
    }
    const int k0 = j * kTile;
    // Tiles wholly above the diagonal for this warp contribute nothing. Because k0 and q0 + wrow0
    // are multiples of 16, k0 <= q0 + wrow0 + 16·kM − 1 implies k0 <= q0 + wrow0: every row of a
    // visited tile has at least one key (k0 <= its query).
    if (k0 <= q0 + wrow0 + 16 * kM - 1) {
      float s[kM][8][4];
      Zero(s);
      // kM == 2 (q128w4, verified first) keeps the generic helpers; kM == 1 needs the cheaper
      // addressing to fit its register cap (MmaABtAt). Both read the same fragments.
      if constexpr (kM == 1) {
        MmaABtAt(s, qf, SmemAddr(sK[buf]), fo);
      } else {
        MmaABt(s, qf, sK[buf], lane);
      }
      const bool masked = k0 + kTile - 1 > q0 + wrow0;
      uint32_t pf[kM][4][4];
      OnlineSoftmaxTile(s, m, l, acc, pf, masked, k0, q0 + wrow0, lane, scale_log2);
      if constexpr (kM == 1) {
        MmaABAt(acc, pf, SmemAddr(sV[buf]), fo);
      } else {
        MmaAB(acc, pf, sV[buf], lane);
      }
    }
  }

  ForwardEpilogue(out, lse, acc, m, l, T, NH, bh, q0 + wrow0, lane);
}

// The forward as first written ("q128w4"): 4 warps × 32 queries, 128 per block; grid
// (T / 128, B·NH), blockIdx.x reversed so that each head's heaviest query tile (most key tiles)
// comes first. Blocks are dispatched in linear index order (x fastest), so this is longest-first
// within a head only.
__global__ void __launch_bounds__(kThreads)
    FlashForwardKernel(bf16* __restrict__ out, float* __restrict__ lse, const bf16* __restrict__ qkv, int T, int NH,
                       float scale_log2) {
  FlashForwardBlock<kWarps, 2>(out, lse, qkv, T, NH, scale_log2, gridDim.x - 1 - blockIdx.x, blockIdx.y);
}

// The same block body in longest-first order over the whole grid: grid (B·NH, T / kBr),
// blockIdx.y reversed, so every head's heaviest query tile is dispatched before any lighter one
// and the last wave holds the lightest tiles (a short tail). kMinBlocks: blocks per SM that
// __launch_bounds__ asks ptxas to fit (the register cap is 65536 / (32·kNW·kMinBlocks)).
template <int kNW, int kM, int kMinBlocks>
__global__ void __launch_bounds__(32 * kNW, kMinBlocks)
    FlashForwardLptKernel(bf16* __restrict__ out, float* __restrict__ lse, const bf16* __restrict__ qkv, int T, int NH,
                          float scale_log2) {
  FlashForwardBlock<kNW, kM>(out, lse, qkv, T, NH, scale_log2, gridDim.y - 1 - blockIdx.y, blockIdx.x);
}

// delta[b, h, t] = Σ_d dout[b, t, h, d] · out[b, t, h, d]; 8 threads per (b, t, h) row, 16 bytes
// (8 bf16) of each operand per thread. When dq_acc is not null, the same pass zeroes it
// (B·NH·T·HS floats = rows·16 float4, two per thread) for the fused backward's atomics.
__global__ void FlashDeltaKernel(float* __restrict__ delta, float4* __restrict__ dq_acc, const bf16* __restrict__ dout,
                                 const bf16* __restrict__ out, int B, int T, int NH) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  const size_t row = i / 8, rows = size_t(B) * T * NH;  // row = (b·T + t)·NH + h
  const int part = int(i % 8);
  float v = 0.f;
  if (row < rows) {
    if (dq_acc != nullptr) {
      dq_acc[2 * i] = make_float4(0.f, 0.f, 0.f, 0.f);
      dq_acc[2 * i + 1] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    const uint4 a = reinterpret_cast<const uint4*>(dout + row * kHs)[part];
    const uint4 o = reinterpret_cast<const uint4*>(out + row * kHs)[part];
    const __nv_bfloat162* a2 = reinterpret_cast<const __nv_bfloat162*>(&a);
    const __nv_bfloat162* o2 = reinterpret_cast<const __nv_bfloat162*>(&o);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 fa = __bfloat1622float2(a2[k]), fo = __bfloat1622float2(o2[k]);
      v += fa.x * fo.x + fa.y * fo.y;
    }
  }
  // The 8 threads of a row are consecutive lanes; every lane takes part in the shuffles.
  v += __shfl_xor_sync(0xffffffffu, v, 4);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  if (row < rows && part == 0) {
    const int h = int(row % NH);
    const size_t bt = row / NH;
    const int tt = int(bt % T), b = int(bt / T);
    delta[(size_t(b) * NH + h) * T + tt] = v;
  }
}

// Head bh (= b·NH + h) of the backward's operands: its q rows in qkv (k, v at +C, +2C; dqkv the
// same), row stride 3C; its dO rows, row stride C; its rows of lse and D.
struct BackwardHead {
  int C;           // NH·HS
  size_t stride;   // 3·C
  size_t qkv_off;  // element offset of (b, t = 0, q, h) in qkv and dqkv
  const bf16 *q, *k, *v, *dout;
  const float *lse, *delta;
  __device__ __forceinline__ BackwardHead(const bf16* qkv, const bf16* dout_all, const float* lse_all,
                                          const float* delta_all, int T, int NH, int bh)
      : C(NH * kHs),
        stride(3 * size_t(C)),
        qkv_off(size_t(bh / NH) * T * stride + size_t(bh % NH) * kHs),
        q(qkv + qkv_off),
        k(q + C),
        v(q + 2 * C),
        dout(dout_all + size_t(bh / NH) * T * C + size_t(bh % NH) * kHs),
        lse(lse_all + size_t(bh) * T),
        delta(delta_all + size_t(bh) * T) {}
  // Starts cp.async copies of query tile q0 (Q, dO, lse, D) into the given shared buffers.
  __device__ __forceinline__ void LoadQueryTile(bf16* sq, bf16* sdo, float* sl, float* sd, int q0) const {
    LoadTile(sq, q + size_t(q0) * stride, stride);
    LoadTile(sdo, dout + size_t(q0) * C, C);
    LoadRow64f(sl, lse + q0);
    LoadRow64f(sd, delta + q0);
  }
  // Writes this warp's dK (times scale) and dV for keys row0.. into dqkv.
  __device__ __forceinline__ void StoreDkDv(bf16* dqkv, int row0, const float (&dk)[8][4], const float (&dv)[8][4],
                                            float scale, int lane) const {
    bf16* dk_g = dqkv + qkv_off + C;
    StoreRows(dk_g, stride, row0, dk, scale, scale, lane);
    StoreRows(dk_g + C, stride, row0, dv, 1.f, 1.f, lane);
  }
};

// From Sᵀ and dPᵀ of a warp's 16 keys (from wrow0) × a tile's 64 queries, in place: Pᵀ =
// exp(Sᵀ·scale − lse), zero above the diagonal on the diagonal tile, and dSᵀ = Pᵀ ∘ (dPᵀ − D);
// then both as A fragments (pf, dsf) for dV += Pᵀ dO and dK += dSᵀ Q. sl, sd: the tile's lse and D.
__device__ __forceinline__ void KeyTileGradients(float (&st)[1][8][4], float (&dpt)[1][8][4], uint32_t (&pf)[1][4][4],
                                                 uint32_t (&dsf)[1][4][4], const float* sl, const float* sd, int wrow0,
                                                 int lane, bool diag, float scale_log2) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int qc = 8 * n + 2 * t + (e & 1);   // query, relative to the tile
      const int kr = wrow0 + g + 8 * (e >> 1);  // key, relative to the key tile
      float p = exp2f(st[0][n][e] * scale_log2 - sl[qc] * kLog2e);
      if (diag && kr > qc) p = 0.f;
      st[0][n][e] = p;
      dpt[0][n][e] = p * (dpt[0][n][e] - sd[qc]);
    }
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    CToA(pf[0][kk], st[0][2 * kk], st[0][2 * kk + 1]);
    CToA(dsf[0][kk], dpt[0][2 * kk], dpt[0][2 * kk + 1]);
  }
}

// dK, dV of the two-pass backward for key tile kt (the 64 keys from 64·kt) of head bh. Key tile kt
// visits the T/64 − kt query tiles from the diagonal down: kt = 0 is the heaviest.
__device__ __forceinline__ void FlashBackwardKvBlock(bf16* __restrict__ dqkv, const bf16* __restrict__ qkv,
                                                     const bf16* __restrict__ dout, const float* __restrict__ lse,
                                                     const float* __restrict__ delta, int T, int NH, float scale,
                                                     float scale_log2, int kt, int bh) {
  __shared__ __align__(128) bf16 sQ[2][kTile * kHs];
  __shared__ __align__(128) bf16 sdO[2][kTile * kHs];
  __shared__ __align__(16) float sL[2][kTile];
  __shared__ __align__(16) float sD[2][kTile];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const BackwardHead hd(qkv, dout, lse, delta, T, NH, bh);
  const int k0 = kt * kTile, n_t = T / kTile;

  // K and V staged through the second buffers; the first query tile (the diagonal) into the first.
  LoadTile(sQ[1], hd.k + size_t(k0) * hd.stride, hd.stride);
  LoadTile(sdO[1], hd.v + size_t(k0) * hd.stride, hd.stride);
  hd.LoadQueryTile(sQ[0], sdO[0], sL[0], sD[0], k0);
  CpAsyncCommit();
  CpAsyncWait<0>();
  __syncthreads();
  const int wrow0 = warp * 16;  // this warp's first key, relative to k0
  uint32_t kf[1][4][4], vf[1][4][4];
  LoadA(kf[0], sQ[1], wrow0, lane);
  LoadA(vf[0], sdO[1], wrow0, lane);
  __syncthreads();

  float dk[1][8][4], dv[1][8][4];
  Zero(dk);
  Zero(dv);
  for (int qt = kt; qt < n_t; ++qt) {
    const int buf = (qt - kt) & 1;
    if (qt + 1 < n_t) {
      hd.LoadQueryTile(sQ[buf ^ 1], sdO[buf ^ 1], sL[buf ^ 1], sD[buf ^ 1], (qt + 1) * kTile);
      CpAsyncCommit();
      CpAsyncWait<1>();
    } else {
      CpAsyncWait<0>();
    }
    __syncthreads();
    // Transposed products: rows = this warp's 16 keys, columns = the tile's 64 queries.
    float st[1][8][4], dpt[1][8][4];
    Zero(st);
    Zero(dpt);
    MmaABt(st, kf, sQ[buf], lane);
    MmaABt(dpt, vf, sdO[buf], lane);
    uint32_t pf[1][4][4], dsf[1][4][4];
    KeyTileGradients(st, dpt, pf, dsf, sL[buf], sD[buf], wrow0, lane, qt == kt, scale_log2);
    MmaAB(dv, pf, sdO[buf], lane);
    MmaAB(dk, dsf, sQ[buf], lane);
    __syncthreads();  // buffer `buf` is refilled in the next iteration
  }

  hd.StoreDkDv(dqkv, k0 + wrow0, dk[0], dv[0], scale, lane);
}

// The backward's tile kernels come in two launch orders (kLpt). false, as first written: grid
// (T / 64, B·NH), blockIdx.x the tile, so each head's heaviest tile starts first (blocks are
// dispatched in linear index order, x fastest: longest-first within a head only). true: grid
// (B·NH, T / 64), blockIdx.y the tile, so every head's heaviest tile is dispatched before any
// lighter one and the last wave holds the lightest (as FlashForwardLptKernel). `reversed`: the
// tile counted from the end (the two-pass dQ, whose last tile is the heaviest).
template <bool kLpt>
__device__ __forceinline__ int GridTile(bool reversed = false) {
  const int n = kLpt ? gridDim.y : gridDim.x, i = kLpt ? blockIdx.y : blockIdx.x;
  return reversed ? n - 1 - i : i;
}
template <bool kLpt>
__device__ __forceinline__ int GridHead() {
  return kLpt ? blockIdx.x : blockIdx.y;
}

// The two-pass dK/dV: key tile kt = 0 is the heaviest.
template <bool kLpt>
__global__ void __launch_bounds__(kThreads)
    FlashBackwardKvKernel(bf16* __restrict__ dqkv, const bf16* __restrict__ qkv, const bf16* __restrict__ dout,
                          const float* __restrict__ lse, const float* __restrict__ delta, int T, int NH, float scale,
                          float scale_log2) {
  FlashBackwardKvBlock(dqkv, qkv, dout, lse, delta, T, NH, scale, scale_log2, GridTile<kLpt>(), GridHead<kLpt>());
}

// dQ of the two-pass backward for query tile qt (the 64 queries from 64·qt) of head bh. Query
// tile qt visits key tiles 0..qt: the last tile is the heaviest.
__device__ __forceinline__ void FlashBackwardQBlock(bf16* __restrict__ dqkv, const bf16* __restrict__ qkv,
                                                    const bf16* __restrict__ dout, const float* __restrict__ lse,
                                                    const float* __restrict__ delta, int T, int NH, float scale,
                                                    float scale_log2, int qt, int bh) {
  __shared__ __align__(128) bf16 sK[2][kTile * kHs];
  __shared__ __align__(128) bf16 sV[2][kTile * kHs];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const BackwardHead hd(qkv, dout, lse, delta, T, NH, bh);
  const size_t stride = hd.stride;
  const int q0 = qt * kTile;

  // Q and dO staged through the second buffers; key tile 0 into the first.
  LoadTile(sK[1], hd.q + size_t(q0) * stride, stride);
  LoadTile(sV[1], hd.dout + size_t(q0) * hd.C, hd.C);
  LoadTile(sK[0], hd.k, stride);
  LoadTile(sV[0], hd.v, stride);
  CpAsyncCommit();
  const int wrow0 = warp * 16;  // this warp's first query, relative to q0
  float lse2[2], dd[2];         // rows g, g+8: lse in log2 units, D
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int i = q0 + wrow0 + g + 8 * hh;
    lse2[hh] = hd.lse[i] * kLog2e;
    dd[hh] = hd.delta[i];
  }
  CpAsyncWait<0>();
  __syncthreads();
  uint32_t qf[1][4][4], dof[1][4][4];
  LoadA(qf[0], sK[1], wrow0, lane);
  LoadA(dof[0], sV[1], wrow0, lane);
  __syncthreads();

  float dq[1][8][4];
  Zero(dq);
  for (int kt = 0; kt <= qt; ++kt) {
    const int buf = kt & 1;
    if (kt + 1 <= qt) {
      LoadTile(sK[buf ^ 1], hd.k + size_t(kt + 1) * kTile * stride, stride);
      LoadTile(sV[buf ^ 1], hd.v + size_t(kt + 1) * kTile * stride, stride);
      CpAsyncCommit();
      CpAsyncWait<1>();
    } else {
      CpAsyncWait<0>();
    }
    __syncthreads();
    float s[1][8][4], dp[1][8][4];
    Zero(s);
    Zero(dp);
    MmaABt(s, qf, sK[buf], lane);
    MmaABt(dp, dof, sV[buf], lane);
    const bool diag = kt == qt;
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int kc = 8 * n + 2 * t + (e & 1);   // key, relative to the key tile
        const int qr = wrow0 + g + 8 * (e >> 1);  // query, relative to q0
        float p = exp2f(s[0][n][e] * scale_log2 - lse2[e >> 1]);
        if (diag && kc > qr) p = 0.f;
        dp[0][n][e] = p * (dp[0][n][e] - dd[e >> 1]);
      }
    uint32_t dsf[1][4][4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) CToA(dsf[0][kk], dp[0][2 * kk], dp[0][2 * kk + 1]);
    MmaAB(dq, dsf, sK[buf], lane);
    __syncthreads();  // buffer `buf` is refilled in the next iteration
  }

  StoreRows(dqkv + hd.qkv_off, stride, q0 + wrow0, dq[0], scale, scale, lane);
}

// The two-pass dQ: query tiles from the last (the heaviest).
template <bool kLpt>
__global__ void __launch_bounds__(kThreads)
    FlashBackwardQKernel(bf16* __restrict__ dqkv, const bf16* __restrict__ qkv, const bf16* __restrict__ dout,
                         const float* __restrict__ lse, const float* __restrict__ delta, int T, int NH, float scale,
                         float scale_log2) {
  FlashBackwardQBlock(dqkv, qkv, dout, lse, delta, T, NH, scale, scale_log2, GridTile<kLpt>(true), GridHead<kLpt>());
}

// The fused backward's fp32 dQ accumulator is in fragment order, so that each warp's
// contribution is 32 lanes × 16 contiguous bytes per n8 tile (one 512-byte reduction per
// instruction): for head bh, 16-query block r16 = query / 16, n8 tile n (columns 8n..8n+7) and
// lane (g = lane / 4, t = lane % 4), the float4 at index ((bh·T/16 + r16)·8 + n)·32 + lane holds
// dQ[16·r16 + g][8n + 2t], [..][8n + 2t + 1], dQ[16·r16 + g + 8][8n + 2t], [..][8n + 2t + 1]
// (the m16n8 C fragment). Unscaled: the 1/sqrt(HS) is applied by FlashDqConvertKernel.
__device__ __forceinline__ size_t DqAccIndex4(int bh, int T, int r16, int n, int lane) {
  return ((size_t(bh) * (T / 16) + r16) * 8 + n) * 32 + lane;
}

// Shared memory of FlashBackwardBlock (dynamic, 58 KiB: over the 48 KiB static limit).
struct BackwardSmem {
  bf16 q[2][kTile * kHs];     // query tiles, double-buffered
  bf16 dout[2][kTile * kHs];  // dO tiles, double-buffered
  bf16 k[kTile * kHs];        // this block's K tile (A of Sᵀ = K Qᵀ, B of dQ += dS K)
  bf16 v[kTile * kHs];        // this block's V tile (A of dPᵀ = V dOᵀ)
  bf16 ds[kTile * kDsPitch];  // dSᵀ of the current query tile (rows keys, columns queries), padded
  float lse[2][kTile];
  float delta[2][kTile];
};
// cp.async and ldmatrix move 16-byte rows; three blocks must fit in an SM's 228 KiB (each block
// also reserves 1 KiB).
static_assert(offsetof(BackwardSmem, ds) % 16 == 0 && offsetof(BackwardSmem, lse) % 16 == 0 &&
                  offsetof(BackwardSmem, delta) % 16 == 0 && (kDsPitch * sizeof(bf16)) % 16 == 0,
              "shared tiles and rows must be 16-byte aligned");
static_assert(3 * (sizeof(BackwardSmem) + 1024) <= 228 * 1024, "three fused backward blocks per SM");

// The fused backward's first copies (one cp.async group): K and V of the key tile from k0 into
// their own tiles, the first query tile (the diagonal) into the first buffers. Smem: BackwardSmem
// or WgmmaBackwardSmem.
template <class Smem>
__device__ __forceinline__ void StartKeyTile(const BackwardHead& hd, Smem& sm, int k0) {
  LoadTile(sm.k, hd.k + size_t(k0) * hd.stride, hd.stride);
  LoadTile(sm.v, hd.v + size_t(k0) * hd.stride, hd.stride);
  hd.LoadQueryTile(sm.q[0], sm.dout[0], sm.lse[0], sm.delta[0], k0);
  CpAsyncCommit();
}

// dK, dV for key tile kt (the 64 keys from 64·kt) of head bh and its share of dQ (fused
// backward); kt = 0 is the heaviest (it visits every query tile). The kernels below map the grid
// to (kt, bh). As FlashBackwardKvBlock, plus per query tile: the block's dSᵀ goes through shared
// memory, warp w computes dQ rows 16w..16w+15 of the query tile over the block's 64 keys (dS K)
// and adds them to dq_acc (fragment order, see DqAccIndex4) with vector reductions. dq_acc must
// be zero before the launch; every key tile at or below a query tile adds to it, in no fixed
// order (dQ is not bitwise deterministic).
// K and V stay in shared memory and their A fragments are re-read per query tile (8 ldmatrix
// more per tile) instead of being held in 32 registers across the loop: 183 registers with no
// spills instead of 255 with spills. The body is compiled for 3 and 2 blocks per SM, each in two
// launch orders (the kernels below it).
__device__ __forceinline__ void FlashBackwardBlock(bf16* __restrict__ dqkv, float* __restrict__ dq_acc,
                                                   const bf16* __restrict__ qkv, const bf16* __restrict__ dout,
                                                   const float* __restrict__ lse, const float* __restrict__ delta,
                                                   int T, int NH, float scale, float scale_log2, int kt, int bh) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  BackwardSmem& sm = *reinterpret_cast<BackwardSmem*>(smem_raw);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const BackwardHead hd(qkv, dout, lse, delta, T, NH, bh);
  const int k0 = kt * kTile, n_t = T / kTile;

  StartKeyTile(hd, sm, k0);
  const int wrow0 = warp * 16;  // this warp's first key (dK, dV) and first query (dQ), relative to the tiles

  float dk[1][8][4], dv[1][8][4];
  Zero(dk);
  Zero(dv);
  for (int qt = kt; qt < n_t; ++qt) {
    const int buf = (qt - kt) & 1;
    // Two barriers per tile. This one: query tile qt (and before the first, K and V) is complete
    // for every thread, and every warp is done with iteration qt − 1, which read buffer buf ^ 1
    // and sm.ds; tile qt + 1 then loads into buf ^ 1 while tile qt is computed.
    CpAsyncWait<0>();
    __syncthreads();
    if (qt + 1 < n_t) {
      hd.LoadQueryTile(sm.q[buf ^ 1], sm.dout[buf ^ 1], sm.lse[buf ^ 1], sm.delta[buf ^ 1], (qt + 1) * kTile);
      CpAsyncCommit();
    }
    // Transposed products: rows = this warp's 16 keys, columns = the tile's 64 queries.
    float st[1][8][4], dpt[1][8][4];
    Zero(st);
    Zero(dpt);
    {
      uint32_t kf[1][4][4], vf[1][4][4];
      LoadA(kf[0], sm.k, wrow0, lane);
      MmaABt(st, kf, sm.q[buf], lane);
      LoadA(vf[0], sm.v, wrow0, lane);
      MmaABt(dpt, vf, sm.dout[buf], lane);
    }
    uint32_t pf[1][4][4], dsf[1][4][4];
    KeyTileGradients(st, dpt, pf, dsf, sm.lse[buf], sm.delta[buf], wrow0, lane, qt == kt, scale_log2);
    // dSᵀ rows wrow0+g and wrow0+g+8, columns 8n+2t..+1 of n8 tile n = 2kk + j: regs 2j and
    // 2j+1 of k16 step kk (CToA).
    {
      bf16* ds_row = sm.ds + (wrow0 + g) * kDsPitch + 2 * t;
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int n = 2 * kk + j;
          *reinterpret_cast<uint32_t*>(ds_row + 8 * n) = dsf[0][kk][2 * j];
          *reinterpret_cast<uint32_t*>(ds_row + 8 * kDsPitch + 8 * n) = dsf[0][kk][2 * j + 1];
        }
    }
    MmaAB(dv, pf, sm.dout[buf], lane);
    MmaAB(dk, dsf, sm.q[buf], lane);
    __syncthreads();  // all four warps' dSᵀ rows are in sm.ds
    // dQ rows wrow0..wrow0+15 of query tile qt: dS (16 queries × 64 keys) · K (64 keys × 64).
    uint32_t dsa[1][4][4];
    LoadDsA(dsa[0], sm.ds, wrow0, lane);
    float dq[1][8][4];
    Zero(dq);
    MmaAB(dq, dsa, sm.k, lane);
    float* acc = dq_acc + 4 * DqAccIndex4(bh, T, qt * (kTile / 16) + warp, 0, lane);
#pragma unroll
    for (int n = 0; n < 8; ++n) RedAddV4(acc + n * 128, dq[0][n][0], dq[0][n][1], dq[0][n][2], dq[0][n][3]);
  }

  hd.StoreDkDv(dqkv, k0 + wrow0, dk[0], dv[0], scale, lane);
}

// The fused backward's kernels: FlashBackwardBlock compiled for 3 or 2 blocks per SM, each in
// both launch orders (GridTile). All share one signature (LaunchBackward picks one through a
// function pointer).
//
// 3 blocks (12 warps) per SM: registers capped at 168, where ptxas spills a few loop-invariant
// addresses (about six L1-resident loads per query tile).
template <bool kLpt>
__global__ void __launch_bounds__(kThreads, 3)
    FlashBackwardKernel3(bf16* __restrict__ dqkv, float* __restrict__ dq_acc, const bf16* __restrict__ qkv,
                         const bf16* __restrict__ dout, const float* __restrict__ lse, const float* __restrict__ delta,
                         int T, int NH, float scale, float scale_log2) {
  FlashBackwardBlock(dqkv, dq_acc, qkv, dout, lse, delta, T, NH, scale, scale_log2, GridTile<kLpt>(), GridHead<kLpt>());
}
// Registers left to ptxas: 183, no spills, 2 blocks (8 warps) per SM. (A minimum of 1 or 2 blocks
// in __launch_bounds__ makes ptxas take 255 registers and spill.)
template <bool kLpt>
__global__ void __launch_bounds__(kThreads)
    FlashBackwardKernel2(bf16* __restrict__ dqkv, float* __restrict__ dq_acc, const bf16* __restrict__ qkv,
                         const bf16* __restrict__ dout, const float* __restrict__ lse, const float* __restrict__ delta,
                         int T, int NH, float scale, float scale_log2) {
  FlashBackwardBlock(dqkv, dq_acc, qkv, dout, lse, delta, T, NH, scale, scale_log2, GridTile<kLpt>(), GridHead<kLpt>());
}

// The q slice of dqkv (B, T, 3, NH, HS) = scale · dq_acc, undoing the fragment order
// (DqAccIndex4). One thread per float4 of dq_acc: two bf16 pairs, rows 16·r16 + g and + 8.
__global__ void FlashDqConvertKernel(bf16* __restrict__ dqkv, const float4* __restrict__ dq_acc, int B, int T, int NH,
                                     float scale) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= size_t(B) * NH * T * (kHs / 4)) return;
  const int lane = int(i & 31), n = int((i >> 5) & 7), g = lane >> 2, t = lane & 3;
  const size_t blk = i >> 8;  // bh·(T/16) + r16: 8 n8 tiles × 32 lanes per 16-query block
  const int r16 = int(blk % (T / 16)), bh = int(blk / (T / 16)), b = bh / NH, h = bh % NH;
  const size_t stride = 3 * size_t(NH) * kHs;
  const float4 v = dq_acc[i];
  bf16* dst = dqkv + (size_t(b) * T + 16 * r16 + g) * stride + size_t(h) * kHs + 8 * n + 2 * t;
  *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(v.x * scale, v.y * scale);
  *reinterpret_cast<__nv_bfloat162*>(dst + 8 * stride) = __floats2bfloat162_rn(v.z * scale, v.w * scale);
}

// ---- Hopper backward: warpgroup MMA (wgmma) -------------------------------------------------
// The same algorithm and dq_acc contract as FlashBackwardBlock, with the five tile products as
// wgmma.mma_async m64n64k16 (bf16 in, fp32 accumulate) of the block's one warpgroup (4 warps).
// Why: Nsight Compute on the H200 (2026-11-30) put FlashBackwardKernel3<true> at 84% of the LSU's
// shared-memory wavefront peak with the tensor pipe 38% busy: with mma.sync every warp reads the
// whole B tile through ldmatrix (92 ldmatrix.x4 per warp per tile pair). wgmma reads each B tile
// once per warpgroup, straight from shared memory.
// Operands: K (A of Sᵀ), Q and dO (B of Sᵀ, dPᵀ) K-major; dO and Q as B of dV, dK, K as B of dQ
// and dS as A of dQ MN-major (the wgmma transpose bits); Pᵀ and dSᵀ as register A fragments (the
// mma.sync A layout, which wgmma's m64nNk16 register A layout equals per warp). The tiles keep
// FlashBackwardBlock's layout (64 rows × 128 bytes, chunk c of row r at c ^ (r & 7)), which is
// wgmma's 128-byte swizzle when a tile starts on a 1024-byte boundary. The accumulator layout
// equals the mma.sync C layout per warp (warp w: rows 16w..16w+15), so KeyTileGradients,
// StoreDkDv and the dQ reductions are shared with the mma.sync kernels.
// Each warp's wgmma.wait_group covers its own part of a warpgroup MMA, and every part reads the
// whole B tile: a buffer is rewritten only after a barrier that all warps reach past their wait.
// Built only for sm_90a (CMAKE_CUDA_ARCHITECTURES 90a, which defines GPUSCOPE_GPT_WGMMA); in other
// builds the kernel body traps and LaunchBackward never selects it (WgmmaAvailable; the fused
// mma.sync path runs instead), as on GPUs other than compute capability 9.0.
struct WgmmaBackwardSmem {
  bf16 q[2][kTile * kHs];
  bf16 dout[2][kTile * kHs];
  bf16 k[kTile * kHs];
  bf16 v[kTile * kHs];
  bf16 ds[kTile * kHs];  // dSᵀ (rows keys, columns queries), swizzled like the other tiles
  float lse[2][kTile];
  float delta[2][kTile];
};
static_assert(sizeof(bf16) * kTile * kHs % 1024 == 0, "every tile starts on a 1024-byte boundary");
constexpr int kWgmmaSmemBytes = sizeof(WgmmaBackwardSmem) + 1024;  // + the alignment slack

// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address, leading
// and stride byte offsets (all >> 4), 128-byte swizzle. K-major: the stride offset is 1024 (next
// 8 rows), the leading one unused; MN-major with a 64-element MN extent: the stride offset is
// 1024 (next 8 K rows), the leading one (next 64 MN elements) unused.
__device__ __forceinline__ uint64_t WgDesc(const void* tile) {
  return uint64_t((SmemAddr(tile) & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}
// Byte offsets of k16 step kk: K-major, 16 elements along the row; MN-major, 16 rows.
constexpr uint64_t kWgKStep = 32 >> 4, kWgMnStep = (16 * 128) >> 4;

__device__ __forceinline__ void WgFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void WgCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most n of this thread's committed wgmma groups are still pending.
template <int n>
__device__ __forceinline__ void WgWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(n) : "memory");
}
// Generic-proxy shared-memory writes (cp.async, st.shared) made visible to wgmma's async proxy.
__device__ __forceinline__ void FenceProxyAsync() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Keeps the compiler from moving accesses of these registers across an asynchronous wgmma.
__device__ __forceinline__ void WgKeep(float (&d)[8][4]) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[n][e])::"memory");
}
__device__ __forceinline__ void WgKeep(uint32_t (&a)[4][4]) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(a[kk][e])::"memory");
}

#define GPUSCOPE_WG_D                                                                                     \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define GPUSCOPE_WG_D_OPS(d)                                                                                   \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),     \
      "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), \
      "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), \
      "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), \
      "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])

// d (+)= A·B for one k16 step, A and B from shared memory; kTa/kTb: MN-major A/B. accumulate = 0
// overwrites d.
template <int kTa, int kTb>
__device__ __forceinline__ void WgmmaSS(float (&d)[8][4], uint64_t a, uint64_t b, int accumulate) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " GPUSCOPE_WG_D ", %32, %33, p, 1, 1, %35, %36;\n}\n"
      : GPUSCOPE_WG_D_OPS(d)
      : "l"(a), "l"(b), "r"(accumulate), "n"(kTa), "n"(kTb)
      : "memory");
#else
  __trap();
#endif
}
// d += A·B for one k16 step, A from registers (mma.sync A fragment layout), B from shared memory
// (kTb: MN-major).
template <int kTb>
__device__ __forceinline__ void WgmmaRS(float (&d)[8][4], const uint32_t (&a)[4], uint64_t b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " GPUSCOPE_WG_D
               ", {%32, %33, %34, %35}, %36, 1, 1, 1, %37;\n"
               : GPUSCOPE_WG_D_OPS(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(kTb)
               : "memory");
#else
  __trap();
#endif
}
#undef GPUSCOPE_WG_D
#undef GPUSCOPE_WG_D_OPS

// d = A·B over K = 64 (four k16 steps; the first overwrites d), A and B from shared memory; their
// descriptors advance by a_step and b_step per step (kWgKStep or kWgMnStep).
template <int kTa, int kTb>
__device__ __forceinline__ void WgmmaK64SS(float (&d)[8][4], uint64_t a, uint64_t b, uint64_t a_step, uint64_t b_step) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) WgmmaSS<kTa, kTb>(d, a + kk * a_step, b + kk * b_step, kk);
}
// d += A·B over K = 64, A as four k16 register fragments, B from shared memory (advancing b_step).
template <int kTb>
__device__ __forceinline__ void WgmmaK64RS(float (&d)[8][4], const uint32_t (&a)[4][4], uint64_t b, uint64_t b_step) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) WgmmaRS<kTb>(d, a[kk], b + kk * b_step);
}

// dK, dV for key tile kt of head bh and its share of dQ (as FlashBackwardBlock), on wgmma.
// kFenceEarly: the next query tile's copies are waited for and fenced (fence.proxy.async, a
// MEMBAR.ALL.CTA in SASS) at the end of an iteration, before the dQ reductions are issued, not at
// the top of the next one, where the MEMBAR waited for those reductions to be acknowledged
// (Nsight Compute, 2026-11-30: 18% of the stall samples at the top-of-loop fence and barrier).
// (Tried and dropped on the H200, 2026-11-30: 2 blocks per SM, 0.372 ms against 0.329 ms with 3;
// deferring the dQ reductions by one tile behind the next tile's Sᵀ and dPᵀ products, 2 blocks
// per SM and an extra barrier, 0.386 ms.)
template <bool kFenceEarly>
__device__ __forceinline__ void FlashBackwardWgmmaBlock(bf16* __restrict__ dqkv, float* __restrict__ dq_acc,
                                                        const bf16* __restrict__ qkv, const bf16* __restrict__ dout,
                                                        const float* __restrict__ lse, const float* __restrict__ delta,
                                                        int T, int NH, float scale, float scale_log2, int kt, int bh) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  WgmmaBackwardSmem& sm =
      *reinterpret_cast<WgmmaBackwardSmem*>(smem_raw + ((1024 - (SmemAddr(smem_raw) & 1023)) & 1023));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const BackwardHead hd(qkv, dout, lse, delta, T, NH, bh);
  const int k0 = kt * kTile, n_t = T / kTile;
  StartKeyTile(hd, sm, k0);
  const int wrow0 = warp * 16;
  const uint64_t dk_desc = WgDesc(sm.k), dv_desc = WgDesc(sm.v), ds_desc = WgDesc(sm.ds);
  // This warp's dQ rows of query tile qt (fragment order, see DqAccIndex4) get dq.
  auto reduce_dq = [&](const float(&dq)[8][4], int qt) {
    float* acc = dq_acc + 4 * DqAccIndex4(bh, T, qt * (kTile / 16) + warp, 0, lane);
#pragma unroll
    for (int n = 0; n < 8; ++n) RedAddV4(acc + n * 128, dq[n][0], dq[n][1], dq[n][2], dq[n][3]);
  };

  float dk[1][8][4], dv[1][8][4], dq[1][8][4];
  uint32_t pf[1][4][4], dsf[1][4][4];
  Zero(dk);
  Zero(dv);
  for (int qt = kt; qt < n_t; ++qt) {
    const int buf = (qt - kt) & 1;
    if (!kFenceEarly || qt == kt) {
      CpAsyncWait<0>();
      FenceProxyAsync();
    }
    __syncthreads();  // tile qt in place for all; iteration qt − 1 done with sm.ds and buffer buf ^ 1
    if (qt + 1 < n_t) {
      hd.LoadQueryTile(sm.q[buf ^ 1], sm.dout[buf ^ 1], sm.lse[buf ^ 1], sm.delta[buf ^ 1], (qt + 1) * kTile);
      CpAsyncCommit();
    }
    const uint64_t q_desc = WgDesc(sm.q[buf]), do_desc = WgDesc(sm.dout[buf]);
    // Sᵀ = K Qᵀ, dPᵀ = V dOᵀ (64 keys × 64 queries; this warp holds keys wrow0..wrow0+15).
    float st[1][8][4], dpt[1][8][4];
    Zero(st);
    Zero(dpt);
    WgFence();
    WgmmaK64SS<0, 0>(st[0], dk_desc, q_desc, kWgKStep, kWgKStep);
    WgmmaK64SS<0, 0>(dpt[0], dv_desc, do_desc, kWgKStep, kWgKStep);
    WgCommit();
    WgWait<0>();
    WgKeep(st[0]);
    WgKeep(dpt[0]);
    WgKeep(dk[0]);
    WgKeep(dv[0]);
    KeyTileGradients(st, dpt, pf, dsf, sm.lse[buf], sm.delta[buf], wrow0, lane, qt == kt, scale_log2);
    // dSᵀ rows wrow0 + g, + 8 (keys), query columns 8n + 2t, +1, into the swizzled tile.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int n = 2 * kk + j, r = wrow0 + g;
        *reinterpret_cast<uint32_t*>(sm.ds + Swz(r, n) + 2 * t) = dsf[0][kk][2 * j];
        *reinterpret_cast<uint32_t*>(sm.ds + Swz(r + 8, n) + 2 * t) = dsf[0][kk][2 * j + 1];
      }
    // dV += Pᵀ dO, dK += dSᵀ Q (B: dO and Q, rows queries = K, MN-major).
    WgFence();
    WgmmaK64RS<1>(dv[0], pf[0], do_desc, kWgMnStep);
    WgmmaK64RS<1>(dk[0], dsf[0], q_desc, kWgMnStep);
    WgCommit();
    FenceProxyAsync();
    __syncthreads();  // every warp's dSᵀ rows are in sm.ds
    // dQ (64 queries × 64) = dS K: A = dS from dSᵀ (rows keys = K, MN-major), B = K (rows keys, MN-major).
    Zero(dq);
    WgFence();
    WgmmaK64SS<1, 1>(dq[0], ds_desc, dk_desc, kWgMnStep, kWgMnStep);
    WgCommit();
    WgWait<0>();
    WgKeep(dq[0]);
    WgKeep(pf[0]);
    WgKeep(dsf[0]);
    if (kFenceEarly && qt + 1 < n_t) {
      CpAsyncWait<0>();
      FenceProxyAsync();
    }
    reduce_dq(dq[0], qt);
  }
  WgKeep(dk[0]);
  WgKeep(dv[0]);
  hd.StoreDkDv(dqkv, k0 + wrow0, dk[0], dv[0], scale, lane);
}

// Grid (B·NH, T / 64), heaviest key tiles of all heads first (GridTile<true>); 3
// blocks per SM (registers capped at 168). "wgmma3_lpt" and, with kFenceEarly, "wgmma3f_lpt".
template <bool kFenceEarly>
__global__ void __launch_bounds__(kThreads, 3)
    FlashBackwardWgmma3LptKernel(bf16* __restrict__ dqkv, float* __restrict__ dq_acc, const bf16* __restrict__ qkv,
                                 const bf16* __restrict__ dout, const float* __restrict__ lse,
                                 const float* __restrict__ delta, int T, int NH, float scale, float scale_log2) {
  FlashBackwardWgmmaBlock<kFenceEarly>(dqkv, dq_acc, qkv, dout, lse, delta, T, NH, scale, scale_log2, GridTile<true>(),
                                       GridHead<true>());
}

// The forward on wgmma for query tile qt (64·kWG queries) of head bh: kWG warpgroups, warpgroup i
// owning queries q0 + 64i .. + 63 (its warp w the 16 rows from 16w, in the mma.sync layout so
// OnlineSoftmaxTile and ForwardEpilogue are shared with FlashForwardBlock); S = Q Kᵀ with Q and
// K from shared memory (K-major), O += P V with P in registers and V from shared memory
// (MN-major). A warpgroup skips a key tile wholly above its queries (a wgmma is issued by all of
// its warps or none). Dynamic shared memory: kWG Q tiles, K and V × 2 buffers, 1024-byte aligned.
template <int kWG>
constexpr int WgmmaForwardSmemBytes() {
  return (kWG + 4) * kTile * kHs * int(sizeof(bf16)) + 1024;
}
template <int kWG>
__device__ __forceinline__ void FlashForwardWgmmaBlock(bf16* __restrict__ out, float* __restrict__ lse,
                                                       const bf16* __restrict__ qkv, int T, int NH, float scale_log2,
                                                       int qt, int bh) {
  constexpr int kNT = 128 * kWG, kBr = kTile * kWG, kTileElems = kTile * kHs;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  bf16* const sQ = reinterpret_cast<bf16*>(smem_raw + ((1024 - (SmemAddr(smem_raw) & 1023)) & 1023));
  bf16* const sK = sQ + kWG * kTileElems;  // two buffers
  bf16* const sV = sK + 2 * kTileElems;    // two buffers
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wg = warp >> 2;
  const int b = bh / NH, h = bh % NH;
  const int C = NH * kHs, q0 = qt * kBr;
  const size_t stride = 3 * size_t(C);
  const bf16* q_g = qkv + size_t(b) * T * stride + size_t(h) * kHs;
  const bf16* k_g = q_g + C;
  const bf16* v_g = q_g + 2 * C;
#pragma unroll
  for (int i = 0; i < kWG; ++i) LoadTile<kNT>(sQ + i * kTileElems, q_g + size_t(q0 + i * kTile) * stride, stride);
  LoadTile<kNT>(sK, k_g, stride);
  LoadTile<kNT>(sV, v_g, stride);
  CpAsyncCommit();
  const int qw0 = q0 + wg * kTile, wrow0 = (warp & 3) * 16;
  const uint64_t q_desc = WgDesc(sQ + wg * kTileElems);

  float acc[1][8][4];
  Zero(acc);
  float m[1][2] = {{-INFINITY, -INFINITY}}, l[1][2] = {{0.f, 0.f}};
  const int n_kt = (q0 + kBr) / kTile;
  for (int j = 0; j < n_kt; ++j) {
    const int buf = j & 1;
    CpAsyncWait<0>();
    FenceProxyAsync();
    __syncthreads();  // key tile j in place for all; every warpgroup done with buffer buf ^ 1
    if (j + 1 < n_kt) {
      LoadTile<kNT>(sK + (buf ^ 1) * kTileElems, k_g + size_t(j + 1) * kTile * stride, stride);
      LoadTile<kNT>(sV + (buf ^ 1) * kTileElems, v_g + size_t(j + 1) * kTile * stride, stride);
      CpAsyncCommit();
    }
    const int k0 = j * kTile;
    if (k0 <= qw0) {  // else the tile is wholly above this warpgroup's queries
      float sc[1][8][4];
      Zero(sc);
      const uint64_t k_desc = WgDesc(sK + buf * kTileElems), v_desc = WgDesc(sV + buf * kTileElems);
      WgFence();
      WgmmaK64SS<0, 0>(sc[0], q_desc, k_desc, kWgKStep, kWgKStep);
      WgCommit();
      WgWait<0>();
      WgKeep(sc[0]);
      uint32_t pf[1][4][4];
      OnlineSoftmaxTile(sc, m, l, acc, pf, k0 + kTile - 1 > qw0 + wrow0, k0, qw0 + wrow0, lane, scale_log2);
      WgFence();
      WgmmaK64RS<1>(acc[0], pf[0], v_desc, kWgMnStep);
      WgCommit();
      WgWait<0>();
      WgKeep(acc[0]);
      WgKeep(pf[0]);
    }
  }
  ForwardEpilogue(out, lse, acc, m, l, T, NH, bh, qw0 + wrow0, lane);
}

// Grid (B·NH, T / (64·kWG)), heaviest query tiles of all heads first (as FlashForwardLptKernel).
template <int kWG, int kMinBlocks>
__global__ void __launch_bounds__(128 * kWG, kMinBlocks)
    FlashForwardWgmmaLptKernel(bf16* __restrict__ out, float* __restrict__ lse, const bf16* __restrict__ qkv, int T,
                               int NH, float scale_log2) {
  FlashForwardWgmmaBlock<kWG>(out, lse, qkv, T, NH, scale_log2, gridDim.y - 1 - blockIdx.y, blockIdx.x);
}

inline void CheckShape(const AttentionShape& sh, const char* what) {
  if (!FlashAttentionSupported(sh)) {
    std::fprintf(stderr,
                 "%s: flash attention needs head size %d and a sequence length that is a multiple of %d "
                 "(got B=%d NH=%d T=%d HS=%d); route this shape to the materialised path (attention.cuh)\n",
                 what, kFlashHeadSize, kFlashSeqMultiple, sh.B, sh.NH, sh.T, sh.HS);
    std::exit(1);
  }
}

}  // namespace flash

// The forward kernels (FlashAttentionForward). Every variant writes the same out and lse (same
// layout, same per-row arithmetic); they differ in block shape and launch order only.
//   kQ128W4    4 warps × 32 queries (128 per block), 2 blocks per SM; each head's heaviest tile
//              first (the kernel as first written).
//   kQ128W4Lpt the same block, heaviest tiles of all heads first.
//   kQ64W4Lpt  4 warps × 16 queries (64 per block): half the accumulators per thread, so 4 blocks
//              per SM, twice the blocks for causal load balance; heaviest first.
//   kQ128W8Lpt 8 warps × 16 queries (128 per block, 256 threads) sharing each K/V tile: the shared
//              memory traffic per query of kQ128W4 with the registers of kQ64W4Lpt; heaviest first.
//   kWg64Lpt, kWg128Lpt: on Hopper's warpgroup MMA (FlashForwardWgmmaBlock), one or two warpgroups
//              (64 or 128 queries per block), heaviest first; on a GPU other than compute
//              capability 9.0 they run kQ128W4Lpt.
// kAuto is not a kernel: it asks FlashAttentionForward to pick the fastest of them for the shape
// (FlashForwardAutotune).
enum class FlashForwardVariant { kAuto, kQ128W4, kQ128W4Lpt, kQ64W4Lpt, kQ128W8Lpt, kWg64Lpt, kWg128Lpt };
inline constexpr FlashForwardVariant kFlashForwardVariants[] = {
    FlashForwardVariant::kQ128W4,    FlashForwardVariant::kQ128W4Lpt, FlashForwardVariant::kQ64W4Lpt,
    FlashForwardVariant::kQ128W8Lpt, FlashForwardVariant::kWg64Lpt,   FlashForwardVariant::kWg128Lpt};

inline const char* FlashForwardVariantName(FlashForwardVariant v) {
  switch (v) {
    case FlashForwardVariant::kQ128W4:
      return "q128w4";
    case FlashForwardVariant::kQ128W4Lpt:
      return "q128w4lpt";
    case FlashForwardVariant::kQ64W4Lpt:
      return "q64w4lpt";
    case FlashForwardVariant::kQ128W8Lpt:
      return "q128w8lpt";
    case FlashForwardVariant::kWg64Lpt:
      return "wg64lpt";
    case FlashForwardVariant::kWg128Lpt:
      return "wg128lpt";
    default:
      return "auto";
  }
}

namespace flash {

// The kernel named by environment variable `var`, read once per caller: unset, empty or "auto" ->
// V::kAuto (autotune per shape); otherwise one of the names of `all` (by `name`), which forces that
// kernel. Any other value is a usage error (message listing the names, exit 1).
template <class V, size_t kN>
V ChoiceFromEnv(const char* var, const V (&all)[kN], const char* (*name)(V), const char* what) {
  const char* e = std::getenv(var);
  if (e == nullptr || *e == '\0' || std::strcmp(e, "auto") == 0) return V::kAuto;
  std::string names;
  for (V v : all) {
    if (std::strcmp(e, name(v)) == 0) return v;
    names += std::string(", ") + name(v);
  }
  std::fprintf(stderr, "%s=%s: unknown flash attention %s; use auto (default)%s\n", var, e, what, names.c_str());
  std::exit(1);
}

}  // namespace flash

// GPUSCOPE_GPT_FLASH_FWD, read once per process (flash::ChoiceFromEnv).
inline FlashForwardVariant FlashForwardVariantFromEnv() {
  static const FlashForwardVariant variant =
      flash::ChoiceFromEnv("GPUSCOPE_GPT_FLASH_FWD", kFlashForwardVariants, FlashForwardVariantName, "forward");
  return variant;
}

// The backward implementations (FlashAttentionBackward). Every one writes the same dqkv up to
// rounding (the fused paths' dQ sums in a varying order); they differ in kernels and launch order.
//   kFused      dQ computed in the dK/dV kernel and added into an fp32 scratch accumulator (5
//               tile products per tile pair), that kernel compiled for 3 blocks per SM; each
//               head's heaviest key tile first (the path as first written).
//   kFused2     the same kernel compiled for 2 blocks per SM (more registers, no spills).
//   kTwoPass    a separate dQ kernel that recomputes S and dP (7 tile products per pair; no
//               atomics, bitwise deterministic).
//   kFusedLpt, kFused2Lpt, kTwoPassLpt: the same kernels launched with grid (B·NH, T / 64),
//               heaviest tiles of all heads first (longest-first; for the two-pass path both its
//               dK/dV and its dQ kernel).
// kAuto is not a path: it asks FlashAttentionBackward to pick the fastest of them for the shape
// (FlashBackwardAutotune).
//   kWgmma3Lpt, kWgmma3FLpt: the fused algorithm on Hopper's warpgroup MMA (FlashBackwardWgmmaBlock),
//               3 blocks per SM, launched longest-first; the second waits for and fences the next
//               tile's copies before the dQ reductions. On a GPU other than compute capability 9.0
//               they run kFusedLpt.
enum class FlashBackwardPath {
  kAuto,
  kFused,
  kFused2,
  kTwoPass,
  kFusedLpt,
  kFused2Lpt,
  kTwoPassLpt,
  kWgmma3Lpt,
  kWgmma3FLpt
};
inline constexpr FlashBackwardPath kFlashBackwardPaths[] = {
    FlashBackwardPath::kFused,     FlashBackwardPath::kFused2,    FlashBackwardPath::kTwoPass,
    FlashBackwardPath::kFusedLpt,  FlashBackwardPath::kFused2Lpt, FlashBackwardPath::kTwoPassLpt,
    FlashBackwardPath::kWgmma3Lpt, FlashBackwardPath::kWgmma3FLpt};

inline const char* FlashBackwardPathName(FlashBackwardPath p) {
  switch (p) {
    case FlashBackwardPath::kFused:
      return "fused";
    case FlashBackwardPath::kFused2:
      return "fused2";
    case FlashBackwardPath::kTwoPass:
      return "twopass";
    case FlashBackwardPath::kFusedLpt:
      return "fused_lpt";
    case FlashBackwardPath::kFused2Lpt:
      return "fused2_lpt";
    case FlashBackwardPath::kTwoPassLpt:
      return "twopass_lpt";
    case FlashBackwardPath::kWgmma3Lpt:
      return "wgmma3_lpt";
    case FlashBackwardPath::kWgmma3FLpt:
      return "wgmma3f_lpt";
    default:
      return "auto";
  }
}

// GPUSCOPE_GPT_FLASH_BWD, read once per process (flash::ChoiceFromEnv): auto, fused, fused2,
// twopass, fused_lpt, fused2_lpt or twopass_lpt.
inline FlashBackwardPath FlashBackwardPathFromEnv() {
  static const FlashBackwardPath path =
      flash::ChoiceFromEnv("GPUSCOPE_GPT_FLASH_BWD", kFlashBackwardPaths, FlashBackwardPathName, "backward");
  return path;
}

namespace flash {

// GPUSCOPE_GPT_FLASH_VERBOSE set and not empty: the forward's and the backward's choices are
// reported on stderr, one line per autotuned shape (nothing per call).
inline bool FlashVerbose() {
  static const bool verbose = [] {
    const char* e = std::getenv("GPUSCOPE_GPT_FLASH_VERBOSE");
    return e != nullptr && *e != '\0';
  }();
  return verbose;
}

// An autotuner's choices of kernel V (FlashForwardVariant or FlashBackwardPath), one per
// (device, B, T, NH) seen in this process. One list per V, shared by all translation units.
template <class V>
struct TunedChoices {
  struct Choice {
    int device, B, T, NH;
    V choice;
  };
  std::mutex mu;
  std::vector<Choice> list;

  // The choice for (device, sh), or V::kAuto if none. The caller holds mu.
  V Find(int device, const AttentionShape& sh) const {
    for (const Choice& c : list)
      if (c.device == device && c.B == sh.B && c.T == sh.T && c.NH == sh.NH) return c.choice;
    return V::kAuto;
  }
};
template <class V>
inline TunedChoices<V>& TheTunedChoices() {
  static TunedChoices<V> c;
  return c;
}

// `requested` if it names a kernel; for V::kAuto the tuned choice for shape sh on the current
// device, or V::kAuto if not tuned yet. For reports; launches nothing.
template <class V>
inline V ChoiceFor(const AttentionShape& sh, V requested) {
  if (requested != V::kAuto) return requested;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  TunedChoices<V>& c = TheTunedChoices<V>();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.Find(device, sh);
}

// The fastest of `candidates` for shape sh on the current device. The first call for a shape
// times every candidate through launch(candidate), which must enqueue one complete run on s
// that may be repeated (TimeCandidates: a warm-up, then the median of 5 interleaved rounds), and synchronises on
// the stream; later calls look the choice up (a mutex and a short list, no CUDA calls besides
// cudaGetDevice). Inside a stream capture nothing can be timed: candidates[0] is used and
// nothing is remembered. `what` names the tuned operation in the verbose report.
template <class V, size_t kN, class Launch>
inline V Autotune(const V (&candidates)[kN], const char* (*name)(V), const char* what, const AttentionShape& sh,
                  cudaStream_t s, Launch&& launch) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  TunedChoices<V>& c = TheTunedChoices<V>();
  std::lock_guard<std::mutex> lock(c.mu);
  if (const V known = c.Find(device, sh); known != V::kAuto) return known;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(s, &capture));
  if (capture != cudaStreamCaptureStatusNone) return candidates[0];

  const std::vector<float> ms = TimeCandidates(kN, 5, s, [&](size_t i) {
    launch(candidates[i]);
    return true;
  });
  CUDA_CHECK_LAUNCH();
  const size_t best = std::min_element(ms.begin(), ms.end()) - ms.begin();
  const V chosen = candidates[best];
  c.list.push_back({device, sh.B, sh.T, sh.NH, chosen});
  if (FlashVerbose()) {
    char times[512];
    int used = 0;
    for (size_t i = 0; i < kN && used >= 0 && size_t(used) < sizeof(times); ++i)
      used += std::snprintf(times + used, sizeof(times) - used, "%s%s %.4f", i ? ", " : "", name(candidates[i]),
                            double(ms[i]));
    std::fprintf(stderr, "flash attention %s B=%d T=%d NH=%d: %s (ms per call: %s)\n", what, sh.B, sh.T, sh.NH,
                 name(chosen), times);
  }
  return chosen;
}

// Launches forward kernel v (not kAuto) on s. The shape has been checked.
// Whether the current device runs the wgmma kernels: they were built (an sm_90a build defines
// GPUSCOPE_GPT_WGMMA; elsewhere their bodies trap) and the device has compute capability 9.0
// (H100, H200), the only one whose cubin is the sm_90a one. Asked once per process.
inline bool WgmmaAvailable() {
#if defined(GPUSCOPE_GPT_WGMMA)
  static const bool ok = [] {
    int device = 0, major = 0, minor = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    return major == 9 && minor == 0;
  }();
  return ok;
#else
  return false;
#endif
}

// One launch of wgmma forward kernel `kernel` (kWG warpgroups per block).
template <int kWG, class Kernel>
inline void LaunchForwardWgmma(Kernel* kernel, bf16* out, float* lse, const bf16* qkv, const AttentionShape& sh,
                               float scale_log2, cudaStream_t s) {
  constexpr int kBytes = WgmmaForwardSmemBytes<kWG>();
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes));
  kernel<<<dim3(sh.B * sh.NH, sh.T / (kTile * kWG)), 128 * kWG, kBytes, s>>>(out, lse, qkv, sh.T, sh.NH, scale_log2);
}

inline void LaunchForward(FlashForwardVariant v, bf16* out, float* lse, const bf16* qkv, const AttentionShape& sh,
                          cudaStream_t s) {
  const float scale_log2 = kLog2e / std::sqrt(float(sh.HS));
  const int bh = sh.B * sh.NH;
  if ((v == FlashForwardVariant::kWg64Lpt || v == FlashForwardVariant::kWg128Lpt) && !WgmmaAvailable())
    v = FlashForwardVariant::kQ128W4Lpt;
  switch (v) {
    case FlashForwardVariant::kWg64Lpt:
      LaunchForwardWgmma<1>(FlashForwardWgmmaLptKernel<1, 4>, out, lse, qkv, sh, scale_log2, s);
      break;
    case FlashForwardVariant::kWg128Lpt:
      LaunchForwardWgmma<2>(FlashForwardWgmmaLptKernel<2, 2>, out, lse, qkv, sh, scale_log2, s);
      break;
    case FlashForwardVariant::kQ128W4Lpt:
      FlashForwardLptKernel<4, 2, 2><<<dim3(bh, sh.T / 128), 128, 0, s>>>(out, lse, qkv, sh.T, sh.NH, scale_log2);
      break;
    case FlashForwardVariant::kQ64W4Lpt:
      FlashForwardLptKernel<4, 1, 3><<<dim3(bh, sh.T / 64), 128, 0, s>>>(out, lse, qkv, sh.T, sh.NH, scale_log2);
      break;
    case FlashForwardVariant::kQ128W8Lpt:
      FlashForwardLptKernel<8, 1, 1><<<dim3(bh, sh.T / 128), 256, 0, s>>>(out, lse, qkv, sh.T, sh.NH, scale_log2);
      break;
    default:
      FlashForwardKernel<<<dim3(sh.T / 128, bh), kThreads, 0, s>>>(out, lse, qkv, sh.T, sh.NH, scale_log2);
      break;
  }
}

// The fastest forward kernel for shape sh (Autotune): timed on the caller's buffers and stream on
// the first call for the shape (the forward only writes out and lse, which the caller's launch
// rewrites next).
inline FlashForwardVariant FlashForwardAutotune(bf16* out, float* lse, const bf16* qkv, const AttentionShape& sh,
                                                cudaStream_t s) {
  return Autotune(kFlashForwardVariants, FlashForwardVariantName, "forward", sh, s,
                  [&](FlashForwardVariant v) { LaunchForward(v, out, lse, qkv, sh, s); });
}

// Launches backward path p (not kAuto) on s: the delta kernel, then the path's kernels. The
// shape has been checked; scratch as FlashAttentionBackward's.
inline void LaunchBackward(FlashBackwardPath p, bf16* dqkv, float* scratch, const bf16* dout, const bf16* out,
                           const bf16* qkv, const float* lse, const AttentionShape& sh, cudaStream_t s) {
  const float scale = 1.f / std::sqrt(float(sh.HS)), scale_log2 = scale * kLog2e;
  const size_t rows = size_t(sh.B) * sh.T * sh.NH;
  float* delta = scratch;
  float* dq_acc = scratch + rows;
  const int bh = sh.B * sh.NH, n_t = sh.T / kTile;
  // The tile kernels as first written take grid (T / 64, B·NH); the longest-first ones
  // (B·NH, T / 64) (GridTile).
  const bool wgmma = p == FlashBackwardPath::kWgmma3Lpt || p == FlashBackwardPath::kWgmma3FLpt;
  if (wgmma && !WgmmaAvailable()) p = FlashBackwardPath::kFusedLpt;
  const bool lpt = p == FlashBackwardPath::kFusedLpt || p == FlashBackwardPath::kFused2Lpt ||
                   p == FlashBackwardPath::kTwoPassLpt || wgmma;
  const dim3 grid = lpt ? dim3(bh, n_t) : dim3(n_t, bh);
  if (p == FlashBackwardPath::kTwoPass || p == FlashBackwardPath::kTwoPassLpt) {
    FlashDeltaKernel<<<CeilDiv(rows * 8, 256), 256, 0, s>>>(delta, nullptr, dout, out, sh.B, sh.T, sh.NH);
    auto* kv = lpt ? FlashBackwardKvKernel<true> : FlashBackwardKvKernel<false>;
    auto* q = lpt ? FlashBackwardQKernel<true> : FlashBackwardQKernel<false>;
    kv<<<grid, kThreads, 0, s>>>(dqkv, qkv, dout, lse, delta, sh.T, sh.NH, scale, scale_log2);
    q<<<grid, kThreads, 0, s>>>(dqkv, qkv, dout, lse, delta, sh.T, sh.NH, scale, scale_log2);
    return;
  }
  FlashDeltaKernel<<<CeilDiv(rows * 8, 256), 256, 0, s>>>(delta, reinterpret_cast<float4*>(dq_acc), dout, out, sh.B,
                                                          sh.T, sh.NH);
  if (wgmma && WgmmaAvailable()) {
    auto* kernel =
        p == FlashBackwardPath::kWgmma3FLpt ? FlashBackwardWgmma3LptKernel<true> : FlashBackwardWgmma3LptKernel<false>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kWgmmaSmemBytes));
    kernel<<<grid, kThreads, kWgmmaSmemBytes, s>>>(dqkv, dq_acc, qkv, dout, lse, delta, sh.T, sh.NH, scale, scale_log2);
  } else {
    const bool two = p == FlashBackwardPath::kFused2 || p == FlashBackwardPath::kFused2Lpt;
    auto* kernel = two ? (lpt ? FlashBackwardKernel2<true> : FlashBackwardKernel2<false>)
                       : (lpt ? FlashBackwardKernel3<true> : FlashBackwardKernel3<false>);
    // Above 48 KiB a kernel's dynamic shared memory must be opted into (CUDA C++ Programming
    // Guide, "Shared Memory"); the attribute belongs to the function in the current context, so
    // it is set on every call (a host-side call, no stream work).
    constexpr int kSmemBytes = sizeof(BackwardSmem);
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    kernel<<<grid, kThreads, kSmemBytes, s>>>(dqkv, dq_acc, qkv, dout, lse, delta, sh.T, sh.NH, scale, scale_log2);
  }
  FlashDqConvertKernel<<<CeilDiv(rows * (kHs / 4), 256), 256, 0, s>>>(dqkv, reinterpret_cast<const float4*>(dq_acc),
                                                                      sh.B, sh.T, sh.NH, scale);
}

// The fastest backward path for shape sh (Autotune): timed on the caller's buffers and stream on
// the first call for the shape (the backward only writes dqkv and scratch, both rewritten by
// every run and by the caller's launch next; its inputs are read only). In a stream capture:
// kFused, the default before autotuning.
inline FlashBackwardPath FlashBackwardAutotune(bf16* dqkv, float* scratch, const bf16* dout, const bf16* out,
                                               const bf16* qkv, const float* lse, const AttentionShape& sh,
                                               cudaStream_t s) {
  static_assert(kFlashBackwardPaths[0] == FlashBackwardPath::kFused, "the untimed choice (stream capture)");
  return Autotune(kFlashBackwardPaths, FlashBackwardPathName, "backward", sh, s,
                  [&](FlashBackwardPath p) { LaunchBackward(p, dqkv, scratch, dout, out, qkv, lse, sh, s); });
}

}  // namespace flash

// out (B, T, NH·HS) and lse (B, NH, T) from qkv (B, T, 3, NH, HS), by forward kernel `variant`
// (default: GPUSCOPE_GPT_FLASH_FWD, else kAuto). kAuto: the fastest kernel for this shape, timed
// on the first call for the shape in this process (flash::FlashForwardAutotune; that call
// synchronises on s and costs about 16 extra forward launches), looked up afterwards.
inline void FlashAttentionForward(__nv_bfloat16* out, float* lse, const __nv_bfloat16* qkv, const AttentionShape& sh,
                                  cudaStream_t s, FlashForwardVariant variant = FlashForwardVariantFromEnv()) {
  flash::CheckShape(sh, "FlashAttentionForward");
  if (variant == FlashForwardVariant::kAuto) variant = flash::FlashForwardAutotune(out, lse, qkv, sh, s);
  flash::LaunchForward(variant, out, lse, qkv, sh, s);
}

// The variant FlashAttentionForward uses for shape sh given `requested` (a kernel, or kAuto): the
// kernel itself, or the autotuner's choice if it has tuned sh on the current device, else kAuto
// (not yet tuned). For reports; launches nothing.
inline FlashForwardVariant FlashForwardVariantFor(const AttentionShape& sh,
                                                  FlashForwardVariant requested = FlashForwardVariantFromEnv()) {
  return flash::ChoiceFor(sh, requested);
}

// Floats of backward scratch for shape sh: delta (B·NH·T), then the fused path's fp32 dQ
// accumulator (B·NH·T·HS, 16-byte aligned since T is a multiple of 128). Every path takes the
// same scratch; the two-pass paths use only delta.
inline size_t FlashBackwardScratchFloats(const AttentionShape& sh) {
  return size_t(sh.B) * sh.NH * sh.T * (1 + size_t(sh.HS));
}

// dqkv (B, T, 3, NH, HS) written from dout (B, T, NH·HS), the forward's out and lse, and qkv, by
// backward path `path` (default: GPUSCOPE_GPT_FLASH_BWD, else kAuto). kAuto: the fastest path for
// this shape, timed on the first call for the shape in this process (flash::FlashBackwardAutotune;
// that call synchronises on s and costs 24 extra backward runs), looked up afterwards.
// scratch: FlashBackwardScratchFloats(sh) floats, 16-byte aligned; contents on entry do not
// matter (the fused paths zero their accumulator in the delta kernel's pass).
inline void FlashAttentionBackward(__nv_bfloat16* dqkv, float* scratch, const __nv_bfloat16* dout,
                                   const __nv_bfloat16* out, const __nv_bfloat16* qkv, const float* lse,
                                   const AttentionShape& sh, cudaStream_t s,
                                   FlashBackwardPath path = FlashBackwardPathFromEnv()) {
  flash::CheckShape(sh, "FlashAttentionBackward");
  if (path == FlashBackwardPath::kAuto) path = flash::FlashBackwardAutotune(dqkv, scratch, dout, out, qkv, lse, sh, s);
  flash::LaunchBackward(path, dqkv, scratch, dout, out, qkv, lse, sh, s);
}

// The path FlashAttentionBackward uses for shape sh given `requested` (a path, or kAuto): the
// path itself, or the autotuner's choice if it has tuned sh on the current device, else kAuto
// (not yet tuned). For reports; launches nothing.
inline FlashBackwardPath FlashBackwardPathFor(const AttentionShape& sh,
                                              FlashBackwardPath requested = FlashBackwardPathFromEnv()) {
  return flash::ChoiceFor(sh, requested);
}

}  // namespace gpuscope::gpt
