// cuBLASLt GEMMs in column-major terms, with a plan cache so that each distinct shape pays for
// descriptor creation and the algorithm heuristic once.
//
// Row-major conventions of the model map onto column-major cuBLASLt as follows (X row-major
// (r, c) is the column-major matrix Xᵀ (c, r) with ld c):
//   out(rows,OC) = inp(rows,C)·Wᵀ      → m=OC, n=rows, k=C,  A=W op T, B=inp op N
//   dinp(rows,C) = dout(rows,OC)·W     → m=C,  n=rows, k=OC, A=W op N, B=dout op N
//   dW(OC,C)    += dout(rows,OC)ᵀ·inp  → m=C,  n=OC,  k=rows, A=inp op N, B=dout op T
// Autotuning: each new shape asks the heuristic for up to kCandidates algorithms (on the H200 it
// offers 8, 5 for GELU_AUX_BIAS) and times each (a warm-up, then the median of 5 interleaved
// rounds, CUDA events, into a scratch output so accumulating GEMMs leave the real one untouched);
// the fastest is kept. Candidates beyond the heuristic's: see AddTileVariants.
// GPUSCOPE_GPT_GEMM_CANDIDATES=1 keeps the heuristic's first (and searches no further);
// GPUSCOPE_GPT_GEMM_VERBOSE=1 prints each shape's choice and TFLOP/s. (Split-K variants of the
// candidates were tried on the H200 on 2026-11-30: no GEMM of the trainer got faster.)
// Compute type is always CUBLAS_COMPUTE_32F: fp32 runs are true fp32 (no TF32), bf16 runs use
// tensor cores with fp32 accumulation.
#pragma once

#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/cuda_util.h"
#include "gpt/layers/common.cuh"

namespace gpuscope::gpt {

inline void CublasLtCheck(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s:%d: %s failed: cuBLAS status %d\n", file, line, call, static_cast<int>(s));
    std::exit(1);
  }
}
#define CUBLASLT_CHECK(call) ::gpuscope::gpt::CublasLtCheck((call), #call, __FILE__, __LINE__)

struct GemmArgs {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int lda = 0;
  long long stride_a = 0;
  const void* b = nullptr;
  int ldb = 0;
  long long stride_b = 0;
  void* d = nullptr;
  int ldd = 0;
  long long stride_d = 0;
  int batch = 1;
  float alpha = 1.f, beta = 0.f;
  cudaDataType_t ab_type = CUDA_R_32F, d_type = CUDA_R_32F;
  const void* bias = nullptr;  // length m, type d_type; CUBLASLT_EPILOGUE_BIAS when set
  // GELU epilogues (tanh approximation, as GeluForwardKernel): kGeluAux writes D = GELU(AB + bias)
  // and aux = AB + bias (the pre-activation, m × n, ld aux_ld); kDGelu writes D = AB ∘ GELU'(aux).
  enum class Gelu { kNone, kGeluAux, kDGelu } gelu = Gelu::kNone;
  void* aux = nullptr;
  int aux_ld = 0;
};

class Matmul {
 public:
  Matmul() {
    CUBLASLT_CHECK(cublasLtCreate(&handle_));
    if (cudaMalloc(&workspace_, kWorkspaceBytes) != cudaSuccess) {
      std::fprintf(stderr, "cudaMalloc of the cuBLASLt workspace failed\n");
      std::exit(1);
    }
  }
  ~Matmul() {
    for (auto& [key, p] : plans_) {
      cublasLtMatrixLayoutDestroy(p.a);
      cublasLtMatrixLayoutDestroy(p.b);
      cublasLtMatrixLayoutDestroy(p.d);
      cublasLtMatmulDescDestroy(p.op);
    }
    cudaFree(workspace_);
    cublasLtDestroy(handle_);
  }
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  // Returns false (and runs nothing) when cuBLASLt has no algorithm for an epilogue request;
  // the caller then does that part itself. A plain GEMM without an algorithm is fatal.
  bool Run(const GemmArgs& g, cudaStream_t stream) {
    Plan& p = GetPlan(g);
    if (!p.ok) return false;
    // The bias and aux pointers change per call under one cached plan.
    if (g.bias) SetAttr(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias);
    if (g.aux) SetAttr(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux);
    if (!p.tuned) Tune(p, g, stream);
    CUBLASLT_CHECK(cublasLtMatmul(handle_, p.op, &g.alpha, g.a, p.a, g.b, p.b, &g.beta, g.d, p.d, g.d, p.d, &p.algo,
                                  workspace_, kWorkspaceBytes, stream));
    return true;
  }

 private:
  static constexpr size_t kWorkspaceBytes = 32ull << 20;
  static constexpr int kCandidates = 24;
  struct Plan {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
    std::vector<cublasLtMatmulAlgo_t> candidates;
    bool tuned = false;
    bool ok = true;  // false: no algorithm for the requested epilogue
  };

  static void SetAttr(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attr, const void* ptr) {
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(op, attr, &ptr, sizeof(ptr)));
  }

  static bool EnvIs(const char* name, const char* value) {
    const char* e = std::getenv(name);
    return e && std::strcmp(e, value) == 0;
  }

  // More candidates than the heuristic offers (off with GPUSCOPE_GPT_GEMM_SEARCH=0): for each
  // algorithm the heuristic named, its first candidate with every tile the algorithm supports and
  // cluster shapes 1x1, 2x1 and 1x2 (the rest of its configuration kept), if cuBLASLt accepts it
  // for this GEMM. On the H200 (2026-11-30) only the DGELU GEMM gained candidates (8 → 30), and its
  // best went from 151–173 µs to 148 µs.
  void AddTileVariants(Plan& p) {
    std::vector<cublasLtMatmulAlgo_t> out;
    std::vector<int32_t> seen_ids;
    auto same = [](const cublasLtMatmulAlgo_t& a, const cublasLtMatmulAlgo_t& b) {
      return std::memcmp(a.data, b.data, sizeof(a.data)) == 0;
    };
    for (const cublasLtMatmulAlgo_t& base : p.candidates) {
      int32_t id = 0;
      size_t got = 0;
      cublasLtMatmulAlgoConfigGetAttribute(&base, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &got);
      if (std::find(seen_ids.begin(), seen_ids.end(), id) != seen_ids.end()) continue;
      seen_ids.push_back(id);
      uint32_t tiles[128];
      if (cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_TILE_IDS, tiles, sizeof(tiles), &got) !=
          CUBLAS_STATUS_SUCCESS)
        continue;
      const size_t n_tiles = std::min<size_t>(got / sizeof(uint32_t), 128);
      for (size_t t = 0; t < n_tiles; ++t)
        for (uint16_t cluster : {uint16_t(CUBLASLT_CLUSTER_SHAPE_1x1x1), uint16_t(CUBLASLT_CLUSTER_SHAPE_2x1x1),
                                 uint16_t(CUBLASLT_CLUSTER_SHAPE_1x2x1)}) {
          cublasLtMatmulAlgo_t a = base;
          cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tiles[t], sizeof(tiles[t]));
          cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof(cluster));
          cublasLtMatmulHeuristicResult_t r;
          if (cublasLtMatmulAlgoCheck(handle_, p.op, p.a, p.b, p.d, p.d, &a, &r) != CUBLAS_STATUS_SUCCESS ||
              r.workspaceSize > kWorkspaceBytes)
            continue;
          bool dup = false;
          for (const auto& c : p.candidates) dup |= same(c, a);
          for (const auto& c : out) dup |= same(c, a);
          if (!dup) out.push_back(a);
        }
    }
    p.candidates.insert(p.candidates.end(), out.begin(), out.end());
  }

  static int Candidates() {
    const char* e = std::getenv("GPUSCOPE_GPT_GEMM_CANDIDATES");
    const int n = e ? std::atoi(e) : kCandidates;
    return n < 1 ? 1 : n > kCandidates ? kCandidates : n;
  }

  // Times every candidate algorithm on this GEMM's operands with a scratch output; keeps the
  // fastest. Candidates that fail to run are skipped.
  void Tune(Plan& p, const GemmArgs& g, cudaStream_t stream) {
    p.tuned = true;
    if (p.candidates.size() < 2) return;
    const size_t elem = g.d_type == CUDA_R_32F ? 4 : 2;
    const size_t n_elems = g.batch > 1 ? size_t(g.stride_d) * g.batch : size_t(g.ldd) * g.n;
    void* scratch = nullptr;
    if (cudaMalloc(&scratch, n_elems * elem) != cudaSuccess) {
      cudaGetLastError();
      return;  // keep the heuristic's first choice
    }
    CUDA_CHECK(cudaMemsetAsync(scratch, 0, n_elems * elem, stream));
    const std::vector<float> ms = TimeCandidates(p.candidates.size(), 5, stream, [&](size_t i) {
      return cublasLtMatmul(handle_, p.op, &g.alpha, g.a, p.a, g.b, p.b, &g.beta, scratch, p.d, scratch, p.d,
                            &p.candidates[i], workspace_, kWorkspaceBytes, stream) == CUBLAS_STATUS_SUCCESS;
    });
    const size_t best = std::min_element(ms.begin(), ms.end()) - ms.begin();
    if (std::isfinite(ms[best])) p.algo = p.candidates[best];  // else keep the heuristic's first
    if (EnvIs("GPUSCOPE_GPT_GEMM_VERBOSE", "1")) {             // shape, the heuristic's first, the best, its TFLOP/s
      const double flops = 2.0 * g.m * g.n * g.k * g.batch;
      int32_t tile = -1, split = -1, stages = -1, id = -1;
      size_t got = 0;
      cublasLtMatmulAlgoConfigGetAttribute(&p.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &got);
      cublasLtMatmulAlgoConfigGetAttribute(&p.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &got);
      cublasLtMatmulAlgoConfigGetAttribute(&p.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages), &got);
      cublasLtMatmulAlgoConfigGetAttribute(&p.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof(split), &got);
      uint16_t cluster = 0;
      cublasLtMatmulAlgoConfigGetAttribute(&p.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof(cluster),
                                           &got);
      std::fprintf(stderr,
                   "gemm m=%d n=%d k=%d batch=%d %c%c beta=%g epi=%d: %zu candidates, first %.1f us, best #%zu %.1f us "
                   "(%.0f TFLOP/s) algo %d tile %d stages %d splitk %d cluster %d\n",
                   g.m, g.n, g.k, g.batch, g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', g.beta,
                   int(g.gelu) + (g.bias ? 10 : 0), ms.size(), 1e3 * ms[0], best, 1e3 * ms[best],
                   flops / (ms[best] * 1e-3) / 1e12, id, tile, stages, split, int(cluster));
    }
    CUDA_CHECK(cudaFree(scratch));
  }

  static cublasLtMatrixLayout_t Layout(cudaDataType_t t, int rows, int cols, int ld, int batch, long long stride) {
    cublasLtMatrixLayout_t l;
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&l, t, rows, cols, ld));
    if (batch > 1) {
      int32_t bc = batch;
      int64_t st = stride;
      CUBLASLT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)));
      CUBLASLT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st, sizeof(st)));
    }
    return l;
  }

  Plan& GetPlan(const GemmArgs& g) {
    char key[256];
    std::snprintf(key, sizeof key, "%d%d %d %d %d %d %lld %d %lld %d %lld %d %d %d %d %d %d %d", g.trans_a, g.trans_b,
                  g.m, g.n, g.k, g.lda, g.stride_a, g.ldb, g.stride_b, g.ldd, g.stride_d, g.batch, int(g.ab_type),
                  int(g.d_type), g.bias != nullptr, g.beta != 0.f, int(g.gelu), g.aux_ld);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    Plan p;
    CUBLASLT_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    cublasLtEpilogue_t epi = g.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    if (g.gelu == GemmArgs::Gelu::kGeluAux) epi = g.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    if (g.gelu == GemmArgs::Gelu::kDGelu) epi = CUBLASLT_EPILOGUE_DGELU;
    if (epi != CUBLASLT_EPILOGUE_DEFAULT)
      CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    if (g.bias)
      CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
    if (g.gelu != GemmArgs::Gelu::kNone) {
      const int64_t ld = g.aux_ld;
      CUBLASLT_CHECK(
          cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g.aux, sizeof(g.aux)));
      CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)));
    }
    p.a = g.trans_a ? Layout(g.ab_type, g.k, g.m, g.lda, g.batch, g.stride_a)
                    : Layout(g.ab_type, g.m, g.k, g.lda, g.batch, g.stride_a);
    p.b = g.trans_b ? Layout(g.ab_type, g.n, g.k, g.ldb, g.batch, g.stride_b)
                    : Layout(g.ab_type, g.k, g.n, g.ldb, g.batch, g.stride_b);
    p.d = Layout(g.d_type, g.m, g.n, g.ldd, g.batch, g.stride_d);
    cublasLtMatmulPreference_t pref;
    CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws = kWorkspaceBytes;
    CUBLASLT_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    cublasLtMatmulHeuristicResult_t res[kCandidates];
    int found = 0;
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.d, p.d, pref, Candidates(), res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS) found = 0;  // e.g. NOT_SUPPORTED for an epilogue/type combination
    if (found == 0 && g.gelu != GemmArgs::Gelu::kNone) {
      std::fprintf(stderr, "cuBLASLt has no algorithm for the epilogue of GEMM [%s]; computing it separately\n", key);
      p.ok = false;
      return plans_.emplace(key, p).first->second;
    }
    if (found == 0) {
      std::fprintf(stderr, "cuBLASLt found no algorithm for GEMM [%s]\n", key);
      std::exit(1);
    }
    p.algo = res[0].algo;
    for (int i = 0; i < found; ++i) p.candidates.push_back(res[i].algo);
    if (Candidates() > 1 && !EnvIs("GPUSCOPE_GPT_GEMM_SEARCH", "0")) AddTileVariants(p);
    return plans_.emplace(key, p).first->second;
  }

  cublasLtHandle_t handle_;
  void* workspace_ = nullptr;
  std::map<std::string, Plan> plans_;
};

// Linear layer helpers over row-major activations (see the file comment for the mapping).
// T is the activation/weight storage type; weight gradients are fp32.
// pre_gelu: when set, out = GELU(inp·Wᵀ + bias) and pre_gelu = inp·Wᵀ + bias (GELU epilogue).
// Returns false when the GELU epilogue has no algorithm (nothing ran).
template <class T>
bool LinearForwardGemm(Matmul& mm, T* out, const T* inp, const T* w, const T* bias, int rows, int C, int OC,
                       cudaStream_t s, T* pre_gelu = nullptr) {
  GemmArgs g;
  g.trans_a = true;
  g.m = OC;
  g.n = rows;
  g.k = C;
  g.a = w;
  g.lda = C;
  g.b = inp;
  g.ldb = C;
  g.d = out;
  g.ldd = OC;
  g.ab_type = g.d_type = CudaType<T>();
  g.bias = bias;
  if (pre_gelu) g.gelu = GemmArgs::Gelu::kGeluAux, g.aux = pre_gelu, g.aux_ld = OC;
  return mm.Run(g, s);
}

// pre_gelu: when set, the layer's input was GELU(pre_gelu) and dinp = (dout · W) ∘ GELU'(pre_gelu)
// if the DGELU epilogue ran (returns true); otherwise dinp = dout · W and the caller applies GELU'.
// (Tried on the H200 on 2026-11-30 for the bias gradients, both slower than the separate kernel's
// 0.94 ms per step: a BGRADB epilogue on the weight-gradient GEMMs, +1.29 ms; DGELU_BGRAD on this
// GEMM for the MLP's bias, +3.2 ms with a bf16 bias gradient, no algorithm with an fp32 one.)
template <class T>
bool LinearBackwardGemms(Matmul& mm, T* dinp, float* dw, const T* dout, const T* inp, const T* w, int rows, int C,
                         int OC, cudaStream_t s, const T* pre_gelu = nullptr) {
  bool dgelu = false;
  GemmArgs g;  // dinp = dout · W
  g.m = C;
  g.n = rows;
  g.k = OC;
  g.a = w;
  g.lda = C;
  g.b = dout;
  g.ldb = OC;
  g.d = dinp;
  g.ldd = C;
  g.ab_type = g.d_type = CudaType<T>();
  if (pre_gelu) {
    GemmArgs gg = g;
    gg.gelu = GemmArgs::Gelu::kDGelu, gg.aux = const_cast<T*>(pre_gelu), gg.aux_ld = C;
    dgelu = mm.Run(gg, s);
  }
  if (!dgelu) mm.Run(g, s);
  GemmArgs h;  // dW += doutᵀ · inp
  h.trans_b = true;
  h.m = C;
  h.n = OC;
  h.k = rows;
  h.a = inp;
  h.lda = C;
  h.b = dout;
  h.ldb = OC;
  h.d = dw;
  h.ldd = C;
  h.beta = 1.f;
  h.ab_type = CudaType<T>();
  h.d_type = CUDA_R_32F;
  mm.Run(h, s);
  return dgelu;
}

}  // namespace gpuscope::gpt
