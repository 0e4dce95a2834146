// The serving findings on GEMM shapes (docs/design.md, "Serving" and "Findings"): GEMMs whose
// token dimension is too small to leave the memory-bound side of the roofline (under-batched) and
// GEMM dimensions that do not fill tensor-core tiles (tensor-unfriendly-shape). The gaps between
// iterations (scheduling-gap) and the serving metrics of the report are in
// findings_serving_gaps.cpp.
//
// GEMM shapes come from the matmul record (trace.h) of the host op that launched each GEMM kernel
// (HostIndex::owner_op: the innermost op with recorded shapes; PyTorch traces need
// record_shapes=True, captures carry the interposed cuBLAS calls). Only "weight" GEMMs are read:
// one product (batch 1) whose B operand is shared by all rows, the rows being the tokens (M).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "core/batch_growth.h"
#include "core/findings.h"
#include "core/findings_serving_detail.h"
#include "core/host_index.h"
#include "core/intervals.h"
#include "core/steps.h"

namespace gpuscope {
namespace serving_detail {

// Inference: no optimizer step counted by the Python bootstrap before a bounded window, and the
// steps are forward passes, or nothing in the trace trains (no optimizer kernels, no optimizer
// step, no autograd backward).
bool is_inference(const FindingContext& f) {
  // The bootstrap counted optimizer steps before a bounded window: training, even where the
  // window's steps replay a CUDA graph with the optimizer inside.
  if (f.device.host.marks().window.optimizer_steps.value_or(0) > 0) return false;
  if (f.report.step_source == step_source_name(StepSource::kForwardPass)) return true;
  // Iterations of a loop: inference unless something in the trace trains (below).
  for (KernelCategory c : f.categories) {
    if (c == KernelCategory::kOptimizer) return false;
  }
  for (const HostEvent& e : f.device.trace.host_events) {
    const std::string_view n = f.device.trace.strings.view(e.name);
    if (n.starts_with("Optimizer.step") || n.find("Backward") != std::string_view::npos ||
        n.starts_with("autograd::engine")) {
      return false;
    }
  }
  return true;
}

std::optional<WeightGemm> weight_gemm(const Trace& t, const HostEvent& op) {
  if (op.kind != HostEventKind::kOp || op.num_matmuls != 1) return std::nullopt;
  const Matmul& mm = t.matmuls_of(op).front();
  if (mm.batch != 1 || mm.m <= 0 || mm.n <= 0 || mm.k <= 0) return std::nullopt;
  return WeightGemm{mm.m, mm.n, mm.k, mm.dtype, mm.source};
}

}  // namespace serving_detail

using serving_detail::is_inference;
using serving_detail::weight_gemm;
using serving_detail::WeightGemm;

namespace {

double element_bytes(Precision p) {
  switch (p) {
    case Precision::kFp64:
      return 8;
    case Precision::kFp32:
    case Precision::kTf32:
      return 4;
    case Precision::kBf16:
    case Precision::kFp16:
      return 2;
    case Precision::kFp8:
    case Precision::kInt8:
      return 1;
    case Precision::kUnknown:
      return 0;
  }
  return 0;
}

// One weight GEMM op of the window with the GPU time of the GEMM kernels it launched.
struct GemmTime {
  WeightGemm g;
  Precision precision = Precision::kUnknown;  // The math type: the dtype, tf32 where the kernel says so.
  double ns = 0;
  int64_t launches = 0;
  double flops(double scale = 1) const { return 2.0 * scale * g.m * g.n * g.k; }
  // Bytes a GEMM moves at least: both operands and the output once.
  double bytes(double scale = 1) const {
    return element_bytes(precision) * (scale * g.m * g.k + double(g.k) * g.n + scale * g.m * g.n);
  }
};

// The host op (index into Trace::host_events) with recorded shapes that launched window kernel
// i, a GEMM kernel; -1 for other kernels or where the trace does not say.
int64_t gemm_owner_op(const FindingContext& f, size_t i) {
  const DeviceContext& d = f.device;
  if (f.categories[i] != KernelCategory::kGemm) return -1;
  const int64_t api = d.host.api_for_correlation(d.kernels[i]->correlation);
  return api < 0 ? -1 : d.host.owner_op(static_cast<size_t>(api));
}

// `weight_kernels`, where given, is set to one flag per window kernel: launched by one of them.
std::vector<GemmTime> window_gemms(const FindingContext& f, std::vector<bool>* weight_kernels = nullptr) {
  const DeviceContext& d = f.device;
  std::map<int64_t, GemmTime> by_op;
  if (weight_kernels) weight_kernels->assign(d.kernels.size(), false);
  for (size_t i = 0; i < d.kernels.size(); ++i) {
    const int64_t op = gemm_owner_op(f, i);
    if (op < 0) continue;
    auto it = by_op.find(op);
    if (it == by_op.end()) {
      const HostEvent& e = d.trace.host_events[static_cast<size_t>(op)];
      const std::optional<WeightGemm> g = weight_gemm(d.trace, e);
      if (!g) continue;
      Precision p = g->dtype;
      if (p == Precision::kUnknown || (p == Precision::kFp32 && f.precisions[i] == Precision::kTf32)) {
        p = f.precisions[i];
      }
      if (element_bytes(p) == 0 || p == Precision::kFp64) continue;
      it = by_op.emplace(op, GemmTime{*g, p}).first;
    }
    it->second.ns += static_cast<double>(d.kernels[i]->end_ns - d.kernels[i]->start_ns);
    ++it->second.launches;
    if (weight_kernels) (*weight_kernels)[i] = true;
  }
  std::vector<GemmTime> out;
  for (auto& [op, g] : by_op) out.push_back(g);
  return out;
}

// The roofline of a GEMM on this device: peak FLOP/s of its math type and peak bytes/s.
struct Roof {
  double flops_per_s = 0, bytes_per_s = 0;
  double ridge() const { return flops_per_s / bytes_per_s; }  // FLOP per byte.
  double time_s(double flops, double bytes) const { return std::max(flops / flops_per_s, bytes / bytes_per_s); }
};

std::optional<Roof> roof(const FindingContext& f, Precision p) {
  const auto tflops = peak_tflops(f.report.name, p);
  const auto tbps = peak_memory_tbps(f.report.name);
  if (!tflops || !tbps) return std::nullopt;
  return Roof{*tflops * 1e12, *tbps * 1e12};
}

}  // namespace

namespace serving_detail {

std::optional<WeightGemm> kernel_weight_gemm(const FindingContext& f, size_t i) {
  const int64_t op = gemm_owner_op(f, i);
  if (op < 0) return std::nullopt;
  return weight_gemm(f.device.trace, f.device.trace.host_events[static_cast<size_t>(op)]);
}

std::optional<double> gemm_roof_s(const FindingContext& f, const WeightGemm& g, Precision p) {
  const auto r = roof(f, p);
  if (!r || element_bytes(p) == 0) return std::nullopt;
  const GemmTime t{g, p};
  return r->time_s(t.flops(), t.bytes());
}

}  // namespace serving_detail

namespace {

std::string fmt_shape(const GemmTime& g) {
  return fmt::format("[{}, {}] x [{}, {}] ({})", g.g.m, g.g.k, g.g.k, g.g.n, precision_name(g.precision));
}

// A GEMM is under-batched below half its own ridge point: M < M*/2.
constexpr double kUnderRidgeFraction = 0.5;
// Under-batched GEMMs must take this share of the weight-GEMM time, and weight GEMMs this share
// of the kernel time, for the finding to fire.
constexpr double kUnderBatchedGemmShare = 0.5;
constexpr double kGemmKernelShare = 0.05;

// The M at which a GEMM of this N, K reaches the ridge (its intensity 2MNK / e(MK+KN+MN) equals
// the device's FLOP per byte); nullopt where it never does.
std::optional<double> ridge_m(const GemmTime& g, const Roof& r) {
  const double e = element_bytes(g.precision), n = double(g.g.n), k = double(g.g.k);
  const double denom = 2 * n * k - r.ridge() * e * (n + k);
  if (denom <= 0) return std::nullopt;
  return r.ridge() * e * n * k / denom;
}

double kernel_ns(const FindingContext& f) {
  double ns = 0;
  for (const Kernel* k : f.device.kernels) ns += static_cast<double>(k->end_ns - k->start_ns);
  return ns;
}

// The time-weighted median of the token dimension.
int64_t typical_m(std::vector<const GemmTime*> v) {
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->g.m < b->g.m; });
  double total = 0, seen = 0;
  for (auto* g : v) total += g->ns;
  for (auto* g : v) {
    seen += g->ns;
    if (seen >= total / 2) return g->g.m;
  }
  return v.empty() ? 0 : v.back()->g.m;
}

// The smallest multiple of `to` at or above v.
int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// The dimension multiple that keeps tensor cores on full, aligned tiles for the math type.
int64_t tile_multiple(Precision p) {
  switch (p) {
    case Precision::kBf16:
    case Precision::kFp16:
      return 8;
    case Precision::kFp8:
    case Precision::kInt8:
      return 16;
    case Precision::kTf32:
    case Precision::kFp32:
      return 4;
    default:
      return 0;
  }
}

// An iteration with every launch serving `growth` times the tokens (est.): the under-batched GEMMs
// at their roofline, the other weight GEMMs scaled as their roofline scales, every other kernel
// by waves (batch_growth.h); host time as it is.
struct GrownIteration {
  double window_ns = 0;                                               // The window at the larger batch (est.).
  double rest_before_ns = 0, rest_after_ns = 0, rest_unknown_ns = 0;  // The per-sequence kernels.
};

// `is_under` flags the under-batched ones of `gemms`; `weight` the window's kernels they launched.
GrownIteration grow_iteration(const FindingContext& f, double base, const std::vector<GemmTime>& gemms,
                              const std::vector<bool>& is_under, const std::vector<bool>& weight, double growth) {
  double before = 0, after = 0;
  for (size_t i = 0; i < gemms.size(); ++i) {
    const GemmTime& g = gemms[i];
    before += g.ns;
    const auto r = roof(f, g.precision);
    if (!r) {
      after += g.ns;
    } else if (is_under[i]) {
      after += std::max(g.ns, 1e9 * r->time_s(g.flops(growth), g.bytes(growth)));
    } else {
      after += g.ns * r->time_s(g.flops(growth), g.bytes(growth)) / r->time_s(g.flops(), g.bytes());
    }
  }
  // GEMM kernels without a recorded shape (a launch the tracer did not tie to its cuBLAS call) are
  // taken to grow as the known ones do; without known ones they stay as they are.
  std::vector<bool> skip = weight;
  double unmatched = 0;
  for (size_t i = 0; i < skip.size(); ++i) {
    if (skip[i] || f.categories[i] != KernelCategory::kGemm) continue;
    skip[i] = true;
    unmatched += static_cast<double>(f.device.kernels[i]->end_ns - f.device.kernels[i]->start_ns);
  }
  const double unmatched_after = before > 0 ? unmatched * after / before : unmatched;
  const BatchGrowth rest = grow_per_sequence_kernels(f.device, growth, skip);
  return GrownIteration{base - before - unmatched - rest.before_ns + after + unmatched_after + rest.after_ns,
                        rest.before_ns, rest.after_ns, rest.unknown_ns};
}

}  // namespace

std::optional<Finding> under_batched(const FindingContext& f) {
  if (!is_inference(f)) return std::nullopt;
  std::vector<bool> weight;
  const std::vector<GemmTime> gemms = window_gemms(f, &weight);
  double all_ns = 0, under_ns = 0;
  std::vector<const GemmTime*> under;
  std::vector<bool> is_under(gemms.size(), false);
  std::vector<Roof> roofs;
  for (size_t i = 0; i < gemms.size(); ++i) {
    const GemmTime& g = gemms[i];
    all_ns += g.ns;
    const auto r = roof(f, g.precision);
    if (!r) continue;
    const auto m_star = ridge_m(g, *r);
    if (!m_star || double(g.g.m) >= kUnderRidgeFraction * *m_star) continue;
    is_under[i] = true;
    under.push_back(&g);
    roofs.push_back(*r);
    under_ns += g.ns;
  }
  if (under.empty() || under_ns < kUnderBatchedGemmShare * all_ns || all_ns < kGemmKernelShare * kernel_ns(f)) {
    return std::nullopt;
  }
  // The growth g at which the under-batched GEMMs' compute time equals their memory time.
  double compute_s = 0, token_bytes_s = 0, weight_bytes_s = 0, flops = 0, bytes = 0;
  for (size_t i = 0; i < under.size(); ++i) {
    const GemmTime& g = *under[i];
    const double e = element_bytes(g.precision);
    compute_s += g.flops() / roofs[i].flops_per_s;
    token_bytes_s += e * double(g.g.m) * double(g.g.k + g.g.n) / roofs[i].bytes_per_s;
    weight_bytes_s += e * double(g.g.k) * double(g.g.n) / roofs[i].bytes_per_s;
    flops += g.flops();
    bytes += g.bytes();
  }
  if (compute_s <= token_bytes_s) return std::nullopt;
  const double growth = weight_bytes_s / (compute_s - token_bytes_s);
  const double base = f.base_ns();
  const GrownIteration grown = grow_iteration(f, base, gemms, is_under, weight, growth);
  const double gain = growth * base / std::max(1.0, grown.window_ns);
  const int64_t m = typical_m(under);
  const Roof& r0 = roofs.front();
  const double achieved_flops = flops / (under_ns / 1e9), achieved_bytes = bytes / (under_ns / 1e9);
  const double tokens = growth * double(m);
  std::string ev = fmt::format(
      "{:.0f} GEMM launches per iteration ({:.0f}% of GEMM time) run memory-bound with {} tokens (M) "
      "each: they achieve {:.1f} TFLOP/s ({:.1f}% of the {:.0f} TFLOP/s {} peak) and {:.0f} GB/s ({:.0f}% of "
      "{:.2f} TB/s); their ridge point is M* = {:.0f} tokens (the roofline turns compute-bound there)",
      static_cast<double>(under.size()) / f.steps(), pct(under_ns, all_ns), m, achieved_flops / 1e12,
      pct(achieved_flops, r0.flops_per_s), r0.flops_per_s / 1e12, precision_name(under.front()->precision),
      achieved_bytes / 1e9, pct(achieved_bytes, r0.bytes_per_s), r0.bytes_per_s / 1e12, tokens);
  const auto per_iter = [&](double ns) { return fmt_ms(static_cast<int64_t>(ns / f.steps())); };
  // "about A instead of B", or "about as long (B)" where the two print alike.
  const auto instead = [&](double after_ns, double before_ns) {
    const std::string a = per_iter(after_ns), b = per_iter(before_ns);
    return a == b ? fmt::format("about as long ({})", b) : fmt::format("about {} instead of {}", a, b);
  };
  if (grown.rest_before_ns > 0) {
    ev += fmt::format(
        "; the other kernels work per sequence: with x{:.0f} the blocks, in waves of what the SMs "
        "hold at once, they would take {} per iteration (est.)",
        growth, instead(grown.rest_after_ns, grown.rest_before_ns));
    if (grown.rest_unknown_ns > 0.1 * grown.rest_before_ns) {
      ev += fmt::format(" ({:.0f}% of their time has no launch configuration and is kept as it is)",
                        pct(grown.rest_unknown_ns, grown.rest_before_ns));
    }
  }
  ev += fmt::format(
      "; with {:.0f} tokens per GEMM an iteration would take {} (est.), "
      "serving about x{:.1f} the tokens per second (est.)",
      tokens, instead(grown.window_ns, base), gain);
  // The multiplier as two printed times: GPU time per iteration's worth of today's tokens.
  ev += estimate_clause(base / f.steps(), grown.window_ns / f.steps() / growth,
                        fmt::format("time per {} tokens per GEMM", m));
  return proposal(
      "Too few tokens per forward pass: GEMMs stream the weights for a handful of tokens", std::move(ev), gain,
      fmt::format("Batch more sequences into each forward pass: continuous batching (admit waiting requests into "
                  "the running batch every iteration, as vLLM, TGI, SGLang and TensorRT-LLM do), or a larger "
                  "batch, up to about {:.0f} tokens per iteration where the KV cache's memory allows. The "
                  "estimate is a throughput gain in tokens per second, not a step-time speedup: an iteration "
                  "takes longer and serves more tokens. It assumes requests queue to fill the batch, the GEMMs "
                  "reach the roofline at the ridge point, the other kernels' grids grow with the batch (each "
                  "wave as long as measured), and host time per iteration stays as it is.",
                  tokens));
}

// How close a math type's aligned GEMMs (N and K multiples of the tile multiple) of the window
// come to their roofline: roofline time over GPU time, weighted by time. Null without any.
std::map<Precision, double> aligned_efficiency(const FindingContext& f, const std::vector<GemmTime>& gemms) {
  std::map<Precision, std::pair<double, double>> sums;  // roofline ns, GPU ns
  for (const GemmTime& g : gemms) {
    const int64_t mult = tile_multiple(g.precision);
    const auto r = roof(f, g.precision);
    if (mult == 0 || !r || g.g.n % mult != 0 || g.g.k % mult != 0 || g.ns <= 0) continue;
    sums[g.precision].first += 1e9 * r->time_s(g.flops(), g.bytes());
    sums[g.precision].second += g.ns;
  }
  std::map<Precision, double> out;
  for (const auto& [p, s] : sums) out[p] = std::min(1.0, s.first / s.second);
  return out;
}

// Trigger: GEMMs with an N or K (the right operand's dimensions) that is not a multiple of the
// tile multiple of their math type (bf16/fp16 8, fp8/int8 16, tf32/fp32 4) take at least 1% of
// kernel time. Estimate, where the roofline is known and the window has aligned GEMMs of the same
// math type: padded, the GEMM would come as close to its roofline as those do (an odd dimension
// can make cuBLAS fall back to a slower kernel, memory-bound or not); it gains nothing when it is
// already as close. Otherwise: a memory-bound one gains nothing, a compute-bound one at most the
// tile waste fraction of its time (the padded share of the dimension rounded up to 64).
std::optional<Finding> tensor_unfriendly_shape(const FindingContext& f) {
  struct Group {
    const GemmTime* example = nullptr;
    char dim = 'N';
    int64_t value = 0, multiple = 0;
    double ns = 0, saved_ns = 0, roof_ns = 0;
    int64_t launches = 0;
    bool memory_bound = true;
    std::optional<double> reference;  // The aligned GEMMs' efficiency.
  };
  const std::vector<GemmTime> gemms = window_gemms(f);
  const std::map<Precision, double> reference = aligned_efficiency(f, gemms);
  std::map<std::tuple<std::string_view, char, int64_t, Precision>, Group> groups;
  for (const GemmTime& g : gemms) {
    const int64_t mult = tile_multiple(g.precision);
    if (mult == 0) continue;
    const auto r = roof(f, g.precision);
    const bool memory_bound = r && g.flops() / g.bytes() < r->ridge();
    const auto ref = reference.find(g.precision);
    for (const auto& [dim, value] : {std::pair{'N', g.g.n}, std::pair{'K', g.g.k}}) {
      if (value % mult == 0) continue;
      Group& grp = groups[{f.device.trace.strings.view(g.g.source), dim, value, g.precision}];
      grp.example = grp.example ? grp.example : &g;
      grp.dim = dim;
      grp.value = value;
      grp.multiple = mult;
      grp.ns += g.ns;
      grp.launches += g.launches;
      grp.memory_bound = grp.memory_bound && memory_bound;
      if (r && ref != reference.end()) {
        const double roof_ns = 1e9 * r->time_s(g.flops(), g.bytes());
        grp.reference = ref->second;
        grp.roof_ns += roof_ns;
        grp.saved_ns += std::max(0.0, g.ns - roof_ns / ref->second);
      } else if (const int64_t padded = round_up(value, 64); !memory_bound) {
        grp.saved_ns += g.ns * static_cast<double>(padded - value) / static_cast<double>(padded);
      }
    }
  }
  if (groups.empty()) return std::nullopt;
  std::vector<Group> v;
  double ns = 0, saved = 0;
  for (auto& [key, g] : groups) {
    v.push_back(g);
    ns += g.ns;
    saved += g.saved_ns;
  }
  if (ns < 0.01 * kernel_ns(f)) return std::nullopt;
  std::sort(v.begin(), v.end(), [](const Group& a, const Group& b) { return a.ns > b.ns; });
  std::string ev;
  for (size_t i = 0; i < v.size() && i < 3; ++i) {
    const Group& g = v[i];
    const std::string per_step = fmt_ms(static_cast<int64_t>(g.saved_ns / f.steps()));
    std::string gain;
    if (g.reference) {
      gain = fmt::format("{:.0f}% of its roofline against {:.0f}% for the aligned {} GEMMs here: {}",
                         pct(g.roof_ns, g.ns), 100 * *g.reference, precision_name(g.example->precision),
                         g.saved_ns < 0.01 * g.ns ? std::string("padding gains nothing measurable")
                                                  : "padding saves about " + per_step + " (est.)");
    } else {
      gain = g.memory_bound ? "memory-bound: padding gains nothing measurable"
                            : "compute-bound: padding gains at most " + per_step;
    }
    ev += fmt::format("{}{} {}: {} = {} is not a multiple of {} (pad to {}); {} per iteration, {}", i ? "; " : "",
                      f.device.trace.strings.view(g.example->g.source), fmt_shape(*g.example), g.dim, g.value,
                      g.multiple, round_up(g.value, 64), fmt_ms(static_cast<int64_t>(g.ns / f.steps())), gain);
  }
  if (v.size() > 3) ev += fmt::format("; {} more", v.size() - 3);
  const auto paced = f.paced_share([&](size_t i) { return is_matrix_math(f.categories[i]); });
  ev += FindingContext::gpu_paced_clause(paced);
  return proposal("GEMM dimensions do not fill tensor-core tiles", std::move(ev),
                  f.speedup_removing_gpu_time(saved, paced),
                  "Pad the named dimensions to a multiple of 64 (at least 8 for bf16/fp16, 16 for fp8, 4 for "
                  "tf32): a vocabulary padded with unused tokens (50257 -> 50304), hidden and FFN sizes rounded "
                  "up. Estimate: padded, a GEMM comes as close to its roofline as this run's aligned GEMMs of "
                  "the same math type do; without those, a memory-bound GEMM gains nothing and a compute-bound "
                  "one at most the tile waste fraction (the padded share of its dimension rounded up to 64).");
}

}  // namespace gpuscope
