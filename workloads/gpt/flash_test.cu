// GPU check and benchmark of flash attention (layers/flash_attention.cuh) against the
// materialised path (layers/attention.cuh, fused) and a double-precision CPU reference.
//
//   flash_test [--iters 20] [--no-bench]
//
// Check: for small shapes, random bf16 qkv and dout; both GPU paths run forward and backward,
// flash's backward once in each of its implementations (kFlashBackwardPaths: fused, fused2,
// twopass, fused_lpt, fused2_lpt, twopass_lpt; GPUSCOPE_GPT_FLASH_BWD is not consulted here), and
// flash's forward once more in each of its kernels (FlashForwardVariant; the runs above use the
// autotuned choice, kAuto, whatever GPUSCOPE_GPT_FLASH_FWD says). Errors are
// max |x − ref| / max |ref| per tensor (out, and dq, dk, dv as the three slices of dqkv), flash
// against the materialised path and against the CPU reference; lse is compared with the CPU
// reference in absolute natural-log units. The flash outputs and the backward's scratch are
// pre-filled with NaN before each run, so an element left unwritten (or an accumulator left
// unzeroed) fails. One JSON line per shape and backward implementation ("bwd", case "check"), one
// per shape and forward kernel ("fwd", case "check_fwd": out against both references, lse against
// the CPU).
// Benchmark: B=16, NH=12, T=1024, HS=64 (GPT-2 small), forward and backward of both paths and
// of each flash backward implementation, milliseconds per call from CUDA events over --iters
// calls after warm-up, TFLOP/s with causal FLOPs (forward 2·2·B·NH·T²·HS / 2, backward 2.5×
// forward), plus the flash-vs-materialised errors at that shape. The flash backward is timed as
// autotuned (bwd_ms_flash, the path named by bwd_flash_variant) and per path (bwd_ms_flash_<path>
// etc.), each path's dqkv checked against the materialised path. The flash forward is timed as
// autotuned (fwd_ms_flash, the kernel named by fwd_flash_variant) and per kernel
// (fwd_ms_flash_<kernel>, fwd_tflops_flash_<kernel>), each kernel's out checked against the
// materialised path (out_err_vs_materialised_<kernel>) and its lse against the autotuned
// kernel's (lse_abs_diff_<kernel>). One JSON line.
// Exit 0 when every error is within tolerance (2e-2 relative; lse 1e-3), 1 otherwise.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "common/args.h"
#include "common/cuda_util.h"
#include "gpt/layers/attention.cuh"
#include "gpt/layers/flash_attention.cuh"

namespace gpuscope::gpt {
namespace {

using bf16 = __nv_bfloat16;
using workloads::JsonLine;

constexpr double kTol = 2e-2;
constexpr double kLseTol = 1e-3;

template <class U>
U* DevAlloc(size_t n) {
  U* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(U)));
  return p;
}

std::vector<bf16> RandomBf16(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<bf16> v(n);
  for (auto& x : v) x = __float2bfloat16(d(rng));
  return v;
}

std::vector<float> ToFloat(const std::vector<bf16>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = __bfloat162float(v[i]);
  return f;
}

template <class U>
std::vector<U> Download(const U* d, size_t n) {
  std::vector<U> h(n);
  CUDA_CHECK(cudaMemcpy(h.data(), d, n * sizeof(U), cudaMemcpyDeviceToHost));
  return h;
}

// max |a − ref| / max |ref| over the elements of slice `part` (0..parts-1) of each row of
// `width` = parts·slice elements. NaN anywhere makes the result NaN.
template <class A, class R>
double RelMaxErr(const std::vector<A>& a, const std::vector<R>& ref, int width, int parts, int part) {
  const int slice = width / parts;
  double num = 0, den = 0;
  for (size_t r = 0; r < a.size() / width; ++r)
    for (int i = 0; i < slice; ++i) {
      const size_t k = r * width + size_t(part) * slice + i;
      const double x = double(a[k]), y = double(ref[k]);
      const double d = std::abs(x - y);
      if (std::isnan(d)) return NAN;
      num = std::max(num, d);
      den = std::max(den, std::abs(y));
    }
  return den > 0 ? num / den : num;
}

// Causal attention forward and backward in double on the CPU from the same bf16 inputs.
// out (B, T, C), lse (B, NH, T), dqkv (B, T, 3C).
void CpuReference(const std::vector<float>& qkv, const std::vector<float>& dout, const AttentionShape& sh,
                  std::vector<double>& out, std::vector<double>& lse, std::vector<double>& dqkv) {
  const int Tn = sh.T, NH = sh.NH, HS = sh.HS, C = NH * HS;
  const double scale = 1.0 / std::sqrt(double(HS));
  out.assign(size_t(sh.B) * Tn * C, 0.0);
  lse.assign(size_t(sh.B) * NH * Tn, 0.0);
  dqkv.assign(size_t(sh.B) * Tn * 3 * C, 0.0);
  std::vector<double> p(Tn), dp(Tn);
  for (int b = 0; b < sh.B; ++b)
    for (int h = 0; h < NH; ++h) {
      auto q = [&](int t) { return &qkv[(size_t(b) * Tn + t) * 3 * C + size_t(h) * HS]; };
      auto k = [&](int t) { return q(t) + C; };
      auto v = [&](int t) { return q(t) + 2 * C; };
      auto dq = [&](int t) { return &dqkv[(size_t(b) * Tn + t) * 3 * C + size_t(h) * HS]; };
      for (int t = 0; t < Tn; ++t) {
        double mx = -INFINITY;
        for (int t2 = 0; t2 <= t; ++t2) {
          double s = 0;
          for (int d = 0; d < HS; ++d) s += double(q(t)[d]) * k(t2)[d];
          p[t2] = s * scale;
          mx = std::max(mx, p[t2]);
        }
        double sum = 0;
        for (int t2 = 0; t2 <= t; ++t2) sum += (p[t2] = std::exp(p[t2] - mx));
        lse[(size_t(b) * NH + h) * Tn + t] = mx + std::log(sum);
        double* o = &out[(size_t(b) * Tn + t) * C + size_t(h) * HS];
        const float* go = &dout[(size_t(b) * Tn + t) * C + size_t(h) * HS];
        for (int t2 = 0; t2 <= t; ++t2) {
          p[t2] /= sum;
          for (int d = 0; d < HS; ++d) o[d] += p[t2] * v(t2)[d];
        }
        double D = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          double s = 0;
          for (int d = 0; d < HS; ++d) s += double(go[d]) * v(t2)[d];
          dp[t2] = s;
          D += p[t2] * s;
        }
        for (int t2 = 0; t2 <= t; ++t2) {
          const double ds = p[t2] * (dp[t2] - D) * scale;
          for (int d = 0; d < HS; ++d) {
            dq(t)[d] += ds * k(t2)[d];
            dq(t2)[C + d] += ds * q(t)[d];
            dq(t2)[2 * C + d] += p[t2] * go[d];
          }
        }
      }
    }
}

// Device buffers of both paths for one shape.
struct Buffers {
  explicit Buffers(const AttentionShape& sh) {
    const size_t n = sh.qkv_elems(), rows = size_t(sh.B) * sh.NH * sh.T;
    qkv = DevAlloc<bf16>(3 * n);
    dout = DevAlloc<bf16>(n);
    q = DevAlloc<bf16>(n);
    k = DevAlloc<bf16>(n);
    v = DevAlloc<bf16>(n);
    y = DevAlloc<bf16>(n);
    att = DevAlloc<bf16>(sh.att_elems());
    datt = DevAlloc<bf16>(sh.att_elems());
    dy = DevAlloc<bf16>(n);
    dq = DevAlloc<bf16>(n);
    dk = DevAlloc<bf16>(n);
    dv = DevAlloc<bf16>(n);
    out_ref = DevAlloc<bf16>(n);
    dqkv_ref = DevAlloc<bf16>(3 * n);
    out_flash = DevAlloc<bf16>(n);
    dqkv_flash = DevAlloc<bf16>(3 * n);
    lse = DevAlloc<float>(rows);
    scratch_floats = FlashBackwardScratchFloats(sh);
    scratch = DevAlloc<float>(scratch_floats);
  }
  ~Buffers() {
    for (void* p : {(void*)qkv, (void*)dout, (void*)q, (void*)k, (void*)v, (void*)y, (void*)att, (void*)datt, (void*)dy,
                    (void*)dq, (void*)dk, (void*)dv, (void*)out_ref, (void*)dqkv_ref, (void*)out_flash,
                    (void*)dqkv_flash, (void*)lse, (void*)scratch})
      cudaFree(p);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;

  void MaterialisedForward(Matmul& mm, const AttentionShape& sh, cudaStream_t s) {
    AttentionForward(mm, out_ref, q, k, v, att, y, qkv, sh, true, s);
  }
  void MaterialisedBackward(Matmul& mm, const AttentionShape& sh, cudaStream_t s) {
    AttentionBackward(mm, dqkv_ref, dy, dq, dk, dv, datt, dout, q, k, v, att, sh, true, s);
  }
  void FlashForward(const AttentionShape& sh, cudaStream_t s,
                    FlashForwardVariant variant = FlashForwardVariant::kAuto) {
    FlashAttentionForward(out_flash, lse, qkv, sh, s, variant);
  }
  void FlashBackward(const AttentionShape& sh, FlashBackwardPath path, cudaStream_t s) {
    FlashAttentionBackward(dqkv_flash, scratch, dout, out_flash, qkv, lse, sh, s, path);
  }

  bf16 *qkv, *dout, *q, *k, *v, *y, *att, *datt, *dy, *dq, *dk, *dv, *out_ref, *dqkv_ref, *out_flash, *dqkv_flash;
  float *lse, *scratch;
  size_t scratch_floats;
};

// Uploads random inputs, runs both paths' forward and the materialised backward once (flash
// outputs pre-filled with NaN).
void RunForwards(Buffers& d, Matmul& mm, const AttentionShape& sh, const std::vector<bf16>& qkv,
                 const std::vector<bf16>& dout) {
  const size_t n = sh.qkv_elems();
  CUDA_CHECK(cudaMemcpy(d.qkv, qkv.data(), 3 * n * sizeof(bf16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d.dout, dout.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d.out_flash, 0xff, n * sizeof(bf16)));  // 0xffff is a bf16 NaN
  CUDA_CHECK(cudaMemset(d.lse, 0xff, size_t(sh.B) * sh.NH * sh.T * sizeof(float)));
  d.MaterialisedForward(mm, sh, 0);
  d.MaterialisedBackward(mm, sh, 0);
  d.FlashForward(sh, 0);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

// Runs flash's forward once with kernel `variant`, out and lse pre-filled with NaN; returns out as
// floats and lse.
void RunFlashForward(Buffers& d, const AttentionShape& sh, FlashForwardVariant variant, std::vector<float>& out,
                     std::vector<float>& lse) {
  const size_t n = sh.qkv_elems(), rows = size_t(sh.B) * sh.NH * sh.T;
  CUDA_CHECK(cudaMemset(d.out_flash, 0xff, n * sizeof(bf16)));
  CUDA_CHECK(cudaMemset(d.lse, 0xff, rows * sizeof(float)));
  d.FlashForward(sh, 0, variant);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  out = ToFloat(Download(d.out_flash, n));
  lse = Download(d.lse, rows);
}

// max |a − b| over two equally long vectors; NaN anywhere makes it NaN.
template <class A, class R>
double AbsMaxErr(const std::vector<A>& a, const std::vector<R>& b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(double(a[i]) - double(b[i]));
    if (std::isnan(d)) return NAN;
    e = std::max(e, d);
  }
  return e;
}

// Runs flash's backward once in implementation `path`, its output and scratch pre-filled with
// NaN (0xffffffff is an fp32 NaN too), and returns dqkv as floats.
std::vector<float> RunFlashBackward(Buffers& d, const AttentionShape& sh, FlashBackwardPath path) {
  const size_t n = sh.qkv_elems();
  CUDA_CHECK(cudaMemset(d.dqkv_flash, 0xff, 3 * n * sizeof(bf16)));
  CUDA_CHECK(cudaMemset(d.scratch, 0xff, d.scratch_floats * sizeof(float)));
  d.FlashBackward(sh, path, 0);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  return ToFloat(Download(d.dqkv_flash, 3 * n));
}

bool Within(double e, double tol) { return e <= tol; }  // false for NaN

// Random inputs for shape sh from `seed`, run once through both forwards and the materialised
// backward (RunForwards), with those outputs downloaded.
struct Prepared {
  Prepared(Matmul& mm, const AttentionShape& sh, uint64_t seed) : d(sh) {
    std::mt19937_64 rng(seed);
    const size_t n = sh.qkv_elems();
    qkv = RandomBf16(3 * n, rng);
    dout = RandomBf16(n, rng);
    RunForwards(d, mm, sh, qkv, dout);
    out_ref = ToFloat(Download(d.out_ref, n));
    out_flash = ToFloat(Download(d.out_flash, n));
    dqkv_ref = ToFloat(Download(d.dqkv_ref, 3 * n));
  }
  Buffers d;
  std::vector<bf16> qkv, dout;
  std::vector<float> out_ref, out_flash, dqkv_ref;
};

// One JSON line per backward implementation; true when all of them pass.
bool CheckShape(Matmul& mm, const AttentionShape& sh, uint64_t seed) {
  Prepared prep(mm, sh, seed);
  Buffers& d = prep.d;
  const std::vector<bf16>&qkv = prep.qkv, &dout = prep.dout;
  const std::vector<float>&out_ref = prep.out_ref, &out_flash = prep.out_flash, &dqkv_ref = prep.dqkv_ref;
  const int C = sh.NH * sh.HS;
  const auto lse_flash = Download(d.lse, size_t(sh.B) * sh.NH * sh.T);
  std::vector<double> cpu_out, cpu_lse, cpu_dqkv;
  CpuReference(ToFloat(qkv), ToFloat(dout), sh, cpu_out, cpu_lse, cpu_dqkv);

  const double lse_err = AbsMaxErr(lse_flash, cpu_lse);
  // The materialised path's own error, for scale (not gated).
  double mat_d = 0;
  for (int p = 0; p < 3; ++p) mat_d = std::max(mat_d, RelMaxErr(dqkv_ref, cpu_dqkv, 3 * C, 3, p));
  static const char* kPart[3] = {"dq", "dk", "dv"};
  bool all_ok = true;
  for (FlashBackwardPath path : kFlashBackwardPaths) {
    const auto dqkv_flash = RunFlashBackward(d, sh, path);
    JsonLine j;
    j.Add("workload", "flash_test")
        .Add("case", "check")
        .Add("bwd", FlashBackwardPathName(path))
        .Add("B", sh.B)
        .Add("NH", sh.NH)
        .Add("T", sh.T)
        .Add("HS", sh.HS);
    bool ok = true;
    auto add = [&](const std::string& name, double e, bool gate) {
      j.Add(name, e);
      if (gate) ok &= Within(e, kTol);
    };
    add("out_err_vs_materialised", RelMaxErr(out_flash, out_ref, C, 1, 0), true);
    for (int p = 0; p < 3; ++p)
      add(std::string(kPart[p]) + "_err_vs_materialised", RelMaxErr(dqkv_flash, dqkv_ref, 3 * C, 3, p), true);
    add("out_err_vs_cpu", RelMaxErr(out_flash, cpu_out, C, 1, 0), true);
    for (int p = 0; p < 3; ++p)
      add(std::string(kPart[p]) + "_err_vs_cpu", RelMaxErr(dqkv_flash, cpu_dqkv, 3 * C, 3, p), true);
    add("materialised_out_err_vs_cpu", RelMaxErr(out_ref, cpu_out, C, 1, 0), false);
    add("materialised_dqkv_err_vs_cpu", mat_d, false);
    j.Add("lse_abs_err_vs_cpu", lse_err);
    ok &= Within(lse_err, kLseTol);
    j.Add("tolerance", kTol).Add("lse_tolerance", kLseTol).Add("pass", ok);
    j.Print();
    all_ok &= ok;
  }
  // Every forward kernel, against both references (the backward runs above used kAuto's).
  for (FlashForwardVariant variant : kFlashForwardVariants) {
    std::vector<float> out_v, lse_v;
    RunFlashForward(d, sh, variant, out_v, lse_v);
    JsonLine j;
    j.Add("workload", "flash_test")
        .Add("case", "check_fwd")
        .Add("fwd", FlashForwardVariantName(variant))
        .Add("B", sh.B)
        .Add("NH", sh.NH)
        .Add("T", sh.T)
        .Add("HS", sh.HS);
    const double e_mat = RelMaxErr(out_v, out_ref, C, 1, 0), e_cpu = RelMaxErr(out_v, cpu_out, C, 1, 0);
    const double e_lse = AbsMaxErr(lse_v, cpu_lse);
    const bool ok = Within(e_mat, kTol) && Within(e_cpu, kTol) && Within(e_lse, kLseTol);
    j.Add("out_err_vs_materialised", e_mat)
        .Add("out_err_vs_cpu", e_cpu)
        .Add("lse_abs_err_vs_cpu", e_lse)
        .Add("tolerance", kTol)
        .Add("lse_tolerance", kLseTol)
        .Add("pass", ok);
    j.Print();
    all_ok &= ok;
  }
  return all_ok;
}

// Milliseconds per call of f over `iters` calls on stream 0, after 3 warm-up calls.
template <class F>
double TimeMs(F&& f, int iters) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  CUDA_CHECK(cudaEventRecord(a, 0));
  for (int i = 0; i < iters; ++i) f();
  CUDA_CHECK(cudaEventRecord(b, 0));
  CUDA_CHECK(cudaEventSynchronize(b));
  CUDA_CHECK_LAUNCH();
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return double(ms) / iters;
}

bool Bench(Matmul& mm, const AttentionShape& sh, int iters, uint64_t seed) {
  Prepared prep(mm, sh, seed);
  Buffers& d = prep.d;
  const std::vector<float>&out_ref = prep.out_ref, &out_flash = prep.out_flash, &dqkv_ref = prep.dqkv_ref;
  const size_t n = sh.qkv_elems();
  const int C = sh.NH * sh.HS;
  // Correctness at the benchmark shape too (many tiles, the real grid).
  const double out_err = RelMaxErr(out_flash, out_ref, C, 1, 0);
  bool ok = Within(out_err, kTol);
  double dqkv_err[std::size(kFlashBackwardPaths)];
  for (size_t k = 0; k < std::size(kFlashBackwardPaths); ++k) {
    const auto dqkv_flash = RunFlashBackward(d, sh, kFlashBackwardPaths[k]);
    double e = 0;
    for (int p = 0; p < 3; ++p) {
      const double ep = RelMaxErr(dqkv_flash, dqkv_ref, 3 * C, 3, p);
      e = std::isnan(ep) ? NAN : std::max(e, ep);
      if (std::isnan(e)) break;
    }
    dqkv_err[k] = e;
    ok &= Within(e, kTol);
  }

  // Every forward kernel at this shape: out against the materialised path, lse against the
  // autotuned kernel's (run by RunForwards; no CPU reference at this size).
  const std::vector<float> lse_auto = Download(d.lse, size_t(sh.B) * sh.NH * sh.T);
  constexpr size_t kNf = std::size(kFlashForwardVariants);
  double fwd_out_err[kNf], fwd_lse_diff[kNf];
  for (size_t k = 0; k < kNf; ++k) {
    std::vector<float> out_v, lse_v;
    RunFlashForward(d, sh, kFlashForwardVariants[k], out_v, lse_v);
    fwd_out_err[k] = RelMaxErr(out_v, out_ref, C, 1, 0);
    fwd_lse_diff[k] = AbsMaxErr(lse_v, lse_auto);
    ok &= Within(fwd_out_err[k], kTol) && Within(fwd_lse_diff[k], kLseTol);
  }

  // The backward of each path reads what its forward left (att, lse): both were run above and
  // forward timing rewrites the same values.
  const double fwd_mat = TimeMs([&] { d.MaterialisedForward(mm, sh, 0); }, iters);
  const double bwd_mat = TimeMs([&] { d.MaterialisedBackward(mm, sh, 0); }, iters);
  const double fwd_flash = TimeMs([&] { d.FlashForward(sh, 0); }, iters);
  double fwd_flash_v[kNf];
  for (size_t k = 0; k < kNf; ++k)
    fwd_flash_v[k] = TimeMs([&] { d.FlashForward(sh, 0, kFlashForwardVariants[k]); }, iters);
  // The autotuned backward (its first warm-up call times every path and keeps the fastest).
  const double bwd_flash_auto = TimeMs([&] { d.FlashBackward(sh, FlashBackwardPath::kAuto, 0); }, iters);
  double bwd_flash[std::size(kFlashBackwardPaths)];
  for (size_t k = 0; k < std::size(kFlashBackwardPaths); ++k)
    bwd_flash[k] = TimeMs([&] { d.FlashBackward(sh, kFlashBackwardPaths[k], 0); }, iters);
  const double fwd_flops = 2.0 * 2.0 * sh.B * sh.NH * double(sh.T) * sh.T * sh.HS / 2.0, bwd_flops = 2.5 * fwd_flops;
  auto tflops = [](double flops, double ms) { return flops / (ms * 1e-3) / 1e12; };
  JsonLine j;
  j.Add("workload", "flash_test")
      .Add("case", "bench")
      .Add("B", sh.B)
      .Add("NH", sh.NH)
      .Add("T", sh.T)
      .Add("HS", sh.HS)
      .Add("iters", iters)
      .Add("fwd_ms_flash", fwd_flash)
      .Add("fwd_ms_materialised", fwd_mat)
      .Add("bwd_ms_materialised", bwd_mat)
      .Add("fwd_tflops_flash", tflops(fwd_flops, fwd_flash))
      .Add("fwd_tflops_materialised", tflops(fwd_flops, fwd_mat))
      .Add("bwd_tflops_materialised", tflops(bwd_flops, bwd_mat))
      .Add("fwd_speedup", fwd_mat / fwd_flash)
      .Add("fwd_flash_variant", FlashForwardVariantName(FlashForwardVariantFor(sh, FlashForwardVariant::kAuto)));
  // Per forward kernel: ms, TFLOP/s, errors.
  for (size_t k = 0; k < kNf; ++k) {
    const std::string name = FlashForwardVariantName(kFlashForwardVariants[k]);
    j.Add("fwd_ms_flash_" + name, fwd_flash_v[k])
        .Add("fwd_tflops_flash_" + name, tflops(fwd_flops, fwd_flash_v[k]))
        .Add("out_err_vs_materialised_" + name, fwd_out_err[k])
        .Add("lse_abs_diff_" + name, fwd_lse_diff[k]);
  }
  j.Add("bwd_ms_flash", bwd_flash_auto)
      .Add("bwd_tflops_flash", tflops(bwd_flops, bwd_flash_auto))
      .Add("bwd_flash_variant", FlashBackwardPathName(FlashBackwardPathFor(sh, FlashBackwardPath::kAuto)));
  // Per backward implementation: ms, TFLOP/s, speed-up over the materialised backward, error.
  for (size_t k = 0; k < std::size(kFlashBackwardPaths); ++k) {
    const std::string name = FlashBackwardPathName(kFlashBackwardPaths[k]);
    j.Add("bwd_ms_flash_" + name, bwd_flash[k])
        .Add("bwd_tflops_flash_" + name, tflops(bwd_flops, bwd_flash[k]))
        .Add("bwd_speedup_" + name, bwd_mat / bwd_flash[k])
        .Add("dqkv_err_vs_materialised_" + name, dqkv_err[k]);
  }
  j.Add("flops_convention", "causal: fwd 2*B*NH*T^2*HS, bwd 2.5x fwd")
      .Add("out_err_vs_materialised", out_err)
      .Add("tolerance", kTol)
      .Add("pass", ok);
  j.Print();
  return ok;
}

}  // namespace
}  // namespace gpuscope::gpt

int main(int argc, char** argv) {
  using namespace gpuscope::gpt;
  gpuscope::workloads::Args args(argc, argv, 1);
  const int iters = int(args.Int("iters", 20));
  const bool bench = !args.Flag("no-bench");
  args.RejectUnknown();
  if (iters < 1) gpuscope::workloads::Args::Usage("--iters must be >= 1");
  Matmul mm;
  bool ok = true;
  const AttentionShape shapes[] = {{2, 256, 3, 64}, {1, 128, 2, 64}, {1, 512, 2, 64}};  // {B, T, NH, HS}
  uint64_t seed = 1;
  for (const auto& sh : shapes) ok &= CheckShape(mm, sh, seed++);
  if (bench) ok &= Bench(mm, {16, 1024, 12, 64}, iters, seed);
  return ok ? 0 : 1;
}
