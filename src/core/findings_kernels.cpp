// The findings about kernels themselves (precision, fusion, grid sizes, occupancy). Each rule's
// comment gives its trigger and its estimate; docs/findings.md has them all.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <fmt/core.h>

#include "core/findings.h"
#include "core/findings_serving_detail.h"
#include "core/fusion.h"
#include "core/occupancy.h"
#include "core/run_protocol.h"

namespace gpuscope {
namespace {

double duration(const Kernel* k) { return static_cast<double>(k->end_ns - k->start_ns); }

// The share of kernel time in Triton kernels: the code is compiled (torch.compile) or written
// in Triton, so "use torch.compile" is no advice.
double triton_time_share(const FindingContext& f) {
  double all = 0, triton = 0;
  for (const Kernel* k : f.device.kernels) {
    all += duration(k);
    if (describe_kernel(f.device.trace.strings.view(k->name)).library == KernelLibrary::kTriton) {
      triton += duration(k);
    }
  }
  return all > 0 ? triton / all : 0;
}

}  // namespace

bool uses_torch_compile(const FindingContext& f) {
  const Trace& t = f.device.trace;
  for (StringId id = 0; id < t.strings.size(); ++id) {
    const std::string_view s = t.strings.view(id);
    if (s.starts_with("CompiledFunction") || s.starts_with("Torch-Compiled Region")) return true;
  }
  return triton_time_share(f) > 0.5;
}

namespace {

// What the device calls its streaming multiprocessors.
std::string_view sm_word(const FindingContext& f) { return is_amd_device(f.report.name) ? "CUs" : "SMs"; }

}  // namespace

// Trigger: over 10% of matrix-math time (GEMM, convolution, attention) in fp32 or tf32.
// Estimate: those kernels speed up by the ratio of the device's dense peak in the 16-bit type
// it supports (bf16, else fp16: preferred_half_precision) to its fp32 (or tf32) peak; without a
// known device, 4x for fp32 and 2x for tf32. A GEMM of known shape speeds up by the ratio of its
// roofline times instead (no more than the peaks' ratio; half for a memory-bound one, whose
// bytes halve). Advice fits the device: bf16 autocast (TF32 as a
// first step where the device has it), fp16 autocast with loss scaling where it has no bf16
// (V100), and nothing device-specific for a device the catalogue does not know.
//
// Matrix kernels shorter than this are not counted by precision_fp32 (a 64 x 64 GEMM at
// batch 1 takes a few microseconds in any type).
constexpr int64_t kLatencyBoundMatrixNs = 10'000;

std::optional<Finding> precision_fp32(const FindingContext& f) {
  const auto& kernels = f.device.kernels;
  int64_t gemm_ns = 0, slow_ns = 0, fp32_ns = 0;
  std::vector<bool> slow(kernels.size());  // The kernels a 16-bit type would shorten.
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (!is_matrix_math(f.categories[i])) continue;
    const int64_t d = kernels[i]->end_ns - kernels[i]->start_ns;
    gemm_ns += d;
    // A kernel this short is bound by latency, not arithmetic: a faster type does not shorten it.
    if (d < kLatencyBoundMatrixNs) continue;
    slow[i] = f.precisions[i] == Precision::kFp32 || f.precisions[i] == Precision::kTf32;
    if (slow[i]) slow_ns += d;
    if (f.precisions[i] == Precision::kFp32) fp32_ns += d;
  }
  if (gemm_ns <= 0 || slow_ns <= 0.1 * gemm_ns) return std::nullopt;
  const auto paced = f.paced_share([&](size_t i) { return slow[i]; });
  const std::string& device = f.report.name;
  const bool amd = is_amd_device(device);
  const std::string_view cores = amd ? "matrix cores" : "tensor cores";
  const std::optional<Precision> half = preferred_half_precision(device);
  double fp32_factor = 4, tf32_factor = 2;
  std::string basis = "assumed ratios for an unknown device";
  if (half) {
    const auto half_peak = peak_tflops(device, *half);
    const auto fp32_peak = peak_tflops(device, Precision::kFp32);
    const auto tf32_peak = peak_tflops(device, Precision::kTf32);
    if (half_peak && fp32_peak) fp32_factor = *half_peak / *fp32_peak;
    if (half_peak && tf32_peak) tf32_factor = *half_peak / *tf32_peak;
    if (half_peak && fp32_peak) {
      basis = fmt::format("dense peaks of the {}: {} {:.0f}, fp32 {:.1f}{} TFLOP/s", find_peak_table(device)->variant,
                          precision_name(*half), *half_peak, *fp32_peak,
                          tf32_peak ? fmt::format(", tf32 {:.0f}", *tf32_peak) : std::string());
    }
  }
  // TF32 alone (set_float32_matmul_precision("high")): fp32 matrix kernels at TF32's peak, the
  // TF32 ones as they are; only where both peaks are known.
  std::optional<double> fp32_to_tf32;  // The fp32 kernels' time ratio, TF32 over fp32.
  if (half && !amd && device_supports(device, Precision::kTf32).value_or(false)) {
    const auto fp32_peak = peak_tflops(device, Precision::kFp32);
    const auto tf32_peak = peak_tflops(device, Precision::kTf32);
    if (fp32_peak && tf32_peak && *tf32_peak > *fp32_peak) fp32_to_tf32 = *fp32_peak / *tf32_peak;
  }
  // Each kernel shortens by the ratio of the peaks; a GEMM of known shape (its op's matmul
  // record) by the ratio of its roofline times, as close to the roofline in either type: a
  // compute-bound one by the peaks' ratio, a memory-bound one (few rows: decode, small batches)
  // by its bytes' ratio only, whatever its math's peak.
  double saved = 0, tf32_saved = 0, shaped_ns = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (!slow[i]) continue;
    const double d = static_cast<double>(kernels[i]->end_ns - kernels[i]->start_ns);
    const bool fp32 = f.precisions[i] == Precision::kFp32;
    double ratio = 1.0 / (fp32 ? fp32_factor : tf32_factor);
    // TF32 alone leaves the TF32 kernels as they are.
    double tf32_ratio = fp32 && fp32_to_tf32 ? *fp32_to_tf32 : 1.0;
    if (const auto g = half ? serving_detail::kernel_weight_gemm(f, i) : std::nullopt) {
      const auto before = serving_detail::gemm_roof_s(f, *g, f.precisions[i]);
      const auto after = serving_detail::gemm_roof_s(f, *g, *half);
      if (before && after && *before > 0) {
        ratio = std::max(ratio, *after / *before);
        shaped_ns += d;
        const auto tf32 = serving_detail::gemm_roof_s(f, *g, Precision::kTf32);
        if (fp32 && tf32) tf32_ratio = std::max(tf32_ratio, *tf32 / *before);
      }
    }
    saved += d * (1 - ratio);
    tf32_saved += d * (1 - tf32_ratio);
  }

  std::string title, advice;
  if (!half) {
    // An unknown device: which 16-bit types it has is not known here, so no dtype is named.
    title = "Matrix math runs in fp32/tf32, not in a 16-bit type";
    advice =
        "Train in mixed precision: torch.autocast with the 16-bit dtype this GPU supports (bf16 where it "
        "has bf16 math, else fp16 with torch.amp.GradScaler for loss scaling).";
  } else if (*half == Precision::kBf16) {
    title = fmt::format("Matrix math runs in fp32/tf32, not on bf16 {}", cores);
    advice = "Train in mixed precision: wrap the forward pass in torch.autocast(\"cuda\", dtype=torch.bfloat16)";
    if (amd) {
      advice += " (on ROCm the bf16 GEMMs run through hipBLASLt/rocBLAS).";
    } else if (device_supports(device, Precision::kTf32).value_or(false)) {
      advice += " (or set torch.backends.cuda.matmul.allow_tf32=True as a first step).";
    } else {
      advice += ".";
    }
  } else {
    // fp16 without bf16 (Volta): fp16 needs loss scaling, and there is no TF32 either.
    title = fmt::format("Matrix math runs in fp32, not on fp16 {}", cores);
    advice = fmt::format(
        "Train in mixed precision with fp16: wrap the forward pass in torch.autocast(\"cuda\", "
        "dtype=torch.float16) and scale the loss with torch.amp.GradScaler(\"cuda\") (the {} has fp16 {} "
        "but no bf16 or TF32 math).",
        find_peak_table(device)->variant, cores);
  }
  std::optional<double> tf32_alone;
  if (fp32_to_tf32) tf32_alone = f.speedup_removing_gpu_time(tf32_saved, paced);
  const bool any_tf32 = slow_ns > fp32_ns;
  advice += any_tf32 ? fmt::format(
                           " Estimate assumes fp32 matrix kernels become {:.1f}x and tf32 {:.1f}x faster ({}); "
                           "elementwise kernels, which also move half the bytes in 16 bits, are not counted.",
                           fp32_factor, tf32_factor, basis)
                     : fmt::format(
                           " Estimate assumes fp32 matrix kernels become {:.1f}x faster ({}); elementwise "
                           "kernels, which also move half the bytes in 16 bits, are not counted.",
                           fp32_factor, basis);
  std::string ev = fmt::format("{} of {} GEMM/convolution/attention time per step ({:.0f}%) is {}",
                               fmt_ms(static_cast<int64_t>(static_cast<double>(slow_ns) / f.steps())),
                               fmt_ms(static_cast<int64_t>(static_cast<double>(gemm_ns) / f.steps())),
                               pct(slow_ns, gemm_ns), any_tf32 ? "fp32 or tf32" : "fp32");
  if (shaped_ns > 0) {
    ev += fmt::format(
        "; {:.0f}% of that time is GEMMs of known shape, each counted at its roofline's ratio in {} (a "
        "memory-bound GEMM gains only from moving half the bytes)",
        pct(shaped_ns, static_cast<double>(slow_ns)), precision_name(*half));
  }
  Finding out = proposal(std::move(title), ev + FindingContext::gpu_paced_clause(paced),
                         f.speedup_removing_gpu_time(saved, paced), std::move(advice));
  if (tf32_alone) out.est_speedup_of_fix.emplace_back("tf32", *tf32_alone);
  return out;
}

namespace {
// The optimizer kernels of the window: count, multi-tensor ones, time.
struct OptimizerKernels {
  int64_t kernels = 0, multi = 0, ns = 0;
};
OptimizerKernels optimizer_kernels(const FindingContext& f) {
  OptimizerKernels o;
  const auto& kernels = f.device.kernels;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (f.categories[i] != KernelCategory::kOptimizer) continue;
    ++o.kernels;
    o.ns += kernels[i]->end_ns - kernels[i]->start_ns;
    if (f.device.trace.strings.view(kernels[i]->name).find("multi_tensor_apply") != std::string_view::npos) ++o.multi;
  }
  return o;
}

// Trigger: 100+ optimizer kernels per step, mostly not multi-tensor.
bool optimizer_fires(const FindingContext& f, const OptimizerKernels& o) {
  return static_cast<double>(o.kernels) / f.steps() >= 100 && o.multi * 2 < o.kernels;
}
}  // namespace

bool optimizer_unfused_fires(const FindingContext& f) { return optimizer_fires(f, optimizer_kernels(f)); }

// The optimizer class the program steps ("SGD" from PyTorch's "Optimizer.step#SGD.step"
// annotations), the most frequent; empty where none is annotated.
std::string optimizer_class(const Trace& t) {
  std::map<std::string, int64_t> seen;
  for (const HostEvent& e : t.host_events) {
    const std::string_view name = t.strings.view(e.name);
    constexpr std::string_view kPrefix = run_protocol::kOptimizerStepRange.prefix;
    if (!name.starts_with(kPrefix)) continue;
    const std::string_view rest = name.substr(kPrefix.size());
    seen[std::string(rest.substr(0, rest.find('.')))] += 1;
  }
  std::string best;
  int64_t most = 0;
  for (const auto& [cls, n] : seen) {
    if (n > most) best = cls, most = n;
  }
  return best;
}

// The fix in the optimizer's own terms: torch.optim's fused implementations exist for Adam,
// AdamW, SGD and Adagrad; the others batch tensors with foreach=True. An optimizer torch.optim
// does not have, or none annotated, is not named.
std::string optimizer_advice(const std::string& cls) {
  static constexpr std::string_view kFused[] = {"Adam", "AdamW", "SGD", "Adagrad"};
  static constexpr std::string_view kForeach[] = {"RMSprop", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"};
  if (std::find(std::begin(kFused), std::end(kFused), cls) != std::end(kFused)) {
    return fmt::format("Use the fused {0}: torch.optim.{0}(params, ..., fused=True) (or foreach=True).", cls);
  }
  if (std::find(std::begin(kForeach), std::end(kForeach), cls) != std::end(kForeach)) {
    return fmt::format("Batch the {0} step over tensors: torch.optim.{0}(params, ..., foreach=True).", cls);
  }
  return fmt::format(
      "Use the optimizer's multi-tensor implementation{}: fused=True where torch.optim has one (Adam, "
      "AdamW, SGD, Adagrad), else foreach=True; a custom optimizer can call torch._foreach_* ops.",
      cls.empty() ? "" : fmt::format(" ({} here)", cls));
}

// Estimate: a fused optimizer does the same arithmetic in a few bandwidth-bound passes: a
// quarter of the per-tensor kernel time, and none of the GPU idle inside the optimizer step
// (the host issuing one small kernel per tensor).
std::optional<Finding> optimizer_unfused(const FindingContext& f) {
  const OptimizerKernels o = optimizer_kernels(f);
  if (!optimizer_fires(f, o)) return std::nullopt;
  const double opt_per_step = static_cast<double>(o.kernels) / f.steps();
  const double idle_ns =
      static_cast<double>(f.idle(IdleCauseId::kLaunch).optimizer_ns + f.idle(IdleCauseId::kHost).optimizer_ns);
  return proposal(
      "The optimizer runs one small kernel per tensor",
      fmt::format("{:.0f} optimizer kernels per step, {} of kernel time and {} of GPU idle per step inside the "
                  "optimizer step, {} multi-tensor",
                  opt_per_step, fmt_ms(static_cast<int64_t>(static_cast<double>(o.ns) / f.steps())),
                  fmt_ms(static_cast<int64_t>(idle_ns / f.steps())), o.multi),
      f.speedup_removing(0.75 * static_cast<double>(o.ns) + idle_ns),
      optimizer_advice(optimizer_class(f.device.trace)) +
          " Estimate assumes the fused step takes a quarter of the per-tensor kernel time and leaves the GPU no idle "
          "time inside it.");
}

// Trigger: the fusion candidates (fusion.h) would save over 2% of the window, and most of their
// kernels are not Triton kernels (a chain of kernels Inductor already generated is what
// torch.compile left unfused: usually a graph break or a reduction boundary, not a missing
// compile). Estimate: a fused chain costs its reductions' time, at least one kernel's
// (fusion.cpp, add_run). The advice names
// torch.compile only when no chain kernel is a Triton kernel.
std::optional<Finding> kernel_fusion(const FindingContext& f) {
  const auto& fusion = f.report.fusion;
  int64_t fusion_saving = 0;
  std::vector<std::string> chain_kernels;
  // Chains through a plain softmax are attention's score passes when the attention finding
  // fires: it claims them (and its fix removes them), so they are not counted twice.
  const bool attention = attention_unfused_fires(f);
  std::vector<const FusionCandidate*> chains;
  for (const auto& c : fusion) {
    if (attention &&
        std::any_of(c.kernels.begin(), c.kernels.end(), [](const std::string& k) { return is_plain_softmax(k); })) {
      continue;
    }
    chains.push_back(&c);
    fusion_saving += c.est_saving_ns;
    chain_kernels.insert(chain_kernels.end(), c.kernels.begin(), c.kernels.end());
  }
  if (chains.empty() || fusion_saving <= 0.02 * f.window_ns()) return std::nullopt;
  const double triton = triton_share(chain_kernels);
  if (triton > 0.5) return std::nullopt;
  // The chains' kernels are the memory-bound ones (fusion_candidates).
  const auto paced = f.paced_share([&](size_t i) { return is_memory_bound(f.categories[i]); });
  const auto& top = *chains.front();
  std::string chain;
  for (size_t i = 0; i < top.kernels.size() && i < 4; ++i) chain += (i ? " -> " : "") + top.kernels[i];
  if (top.kernels.size() > 4) chain += fmt::format(" -> ... ({} kernels)", top.kernels.size());
  const std::string advice =
      triton > 0 || uses_torch_compile(f)
          ? "The program already runs torch.compile (Triton kernels or compiled regions in this trace): fuse the "
            "eager chains by hand (a fused "
            "kernel for the chain, e.g. fused LayerNorm, bias+GELU, dropout+residual+LayerNorm, or a custom Triton "
            "kernel), or remove the graph breaks that keep the eager kernels outside the compiled region "
            "(torch._dynamo.explain lists them)."
          : "Fuse elementwise chains: torch.compile(model), or fused kernels (fused LayerNorm, bias+GELU, "
            "dropout+residual+LayerNorm).";
  return proposal("Chains of memory-bound kernels could be fused",
                  fmt::format("{} recurring chains of elementwise/normalisation kernels; the largest: {} ({} times, "
                              "{:.1f}% of the window)",
                              chains.size(), chain, top.occurrences, top.pct) +
                      FindingContext::gpu_paced_clause(paced),
                  f.speedup_removing_gpu_time(static_cast<double>(fusion_saving), paced),
                  advice +
                      " Estimate assumes a fused chain costs the time of its reductions (norms, sums, "
                      "softmax: each stays a kernel of its own), or one kernel's time where it has none.");
}

// Trigger: over 10% of kernel time is SM capacity left idle by grids with fewer blocks than
// SMs. Estimate: the same throughput model as low-occupancy: an SM's throughput grows with its
// resident warps up to 50% occupancy, so a kernel of g blocks (one per SM) speeds up by
// SMs·min(occ, 0.5) / (g·min(block warps, 0.5)), where occ is the kernel's theoretical
// occupancy; no kernel gets shorter than kMinKernelNs. Communication kernels (NCCL runs one
// block per channel by design) are left out.
std::optional<Finding> small_grid(const FindingContext& f) {
  const Device* dev = f.device.device;
  if (!dev || !dev->num_sms) return std::nullopt;
  constexpr double kMinKernelNs = 2000;  // assumed: shorter kernels are dominated by launch and tail
  const double sms = *dev->num_sms;
  const auto& kernels = f.device.kernels;
  double lost = 0, busy = 0, saved = 0;
  std::vector<bool> small(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Kernel* k = kernels[i];
    const double d = duration(k);
    busy += d;
    if (!k->has_grid() || f.categories[i] == KernelCategory::kCommunication) continue;
    const double g = static_cast<double>(k->grid.volume());
    if (g >= sms) continue;
    small[i] = true;
    lost += d * (1.0 - g / sms);
    double gain = sms / g;
    const auto occ = theoretical_occupancy(*dev, *k);
    if (occ && dev->max_threads_per_sm) {
      const double block_warps = std::ceil(static_cast<double>(k->block.volume()) / 32.0);
      const double block_frac = std::min(1.0, block_warps * 32.0 / *dev->max_threads_per_sm);
      gain *= std::min(occ->fraction, 0.5) / std::min(block_frac, 0.5);
    }
    gain = std::max(1.0, gain);
    saved += std::max(0.0, d - std::max(d / gain, std::min(d, kMinKernelNs)));
  }
  if (busy <= 0 || lost <= 0.1 * busy || saved <= 0) return std::nullopt;
  const auto paced = f.paced_share([&](size_t i) { return small[i]; });
  const std::string_view sms_word = sm_word(f);
  // Compiled code is not told to compile.
  const bool compiled = uses_torch_compile(f);
  return proposal(fmt::format("Kernels launch fewer blocks than the GPU has {}", sms_word),
                  fmt::format("{:.0f}% of kernel time is {} capacity left idle by grids smaller than {} {} "
                              "(SM-active estimate {:.1f}% vs busy {:.1f}%)",
                              pct(lost, busy), sms_word.substr(0, 2), *dev->num_sms, sms_word,
                              f.report.sm_active_est_pct.value_or(0), f.report.busy_pct) +
                      FindingContext::gpu_paced_clause(paced),
                  f.speedup_removing_gpu_time(saved, paced),
                  fmt::format("Give each kernel more parallel work: a larger batch or sequence, fewer but larger "
                              "tensors, more blocks per kernel (split the work){}. Estimate: the same work spread "
                              "over every {}, throughput growing with resident warps up to 50% occupancy.",
                              compiled ? "" : ", or torch.compile to fuse small ops", sms_word.substr(0, 2)));
}

// Trigger: over 10% of kernel time in non-matrix kernels whose registers or shared memory
// allow under 25% theoretical occupancy (matrix math, GEMM, convolution and attention, runs at
// low occupancy by design and is excluded). Estimate: a bandwidth-bound kernel's throughput grows with
// resident warps up to ~50%.
std::optional<Finding> low_occupancy(const FindingContext& f) {
  const Device* dev = f.device.device;
  if (!dev || !dev->max_threads_per_sm || !dev->regs_per_sm) return std::nullopt;
  const auto& kernels = f.device.kernels;
  double kernel_ns = 0, starved_ns = 0, saved_ns = 0;
  int64_t by_regs = 0, by_smem = 0;
  std::vector<bool> starved(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    const double d = duration(kernels[i]);
    kernel_ns += d;
    if (is_matrix_math(f.categories[i])) continue;
    const auto occ = theoretical_occupancy(*dev, *kernels[i]);
    if (!occ || occ->fraction >= 0.25 || occ->limiter == OccupancyLimiter::kThreads) continue;
    starved_ns += d;
    starved[i] = true;
    saved_ns += d * (1.0 - occ->fraction / 0.5);
    (occ->limiter == OccupancyLimiter::kRegisters ? by_regs : by_smem) += 1;
  }
  if (kernel_ns <= 0 || starved_ns <= 0.1 * kernel_ns) return std::nullopt;
  const auto paced = f.paced_share([&](size_t i) { return starved[i]; });
  return proposal(
      "Kernels keep too few warps resident to hide memory latency",
      fmt::format("{:.0f}% of kernel time runs at under 25% theoretical occupancy, limited by {} ({} "
                  "launches by registers, {} by shared memory)",
                  pct(starved_ns, kernel_ns), by_regs >= by_smem ? "registers" : "shared memory", by_regs, by_smem) +
          FindingContext::gpu_paced_clause(paced),
      f.speedup_removing_gpu_time(saved_ns, paced),
      is_amd_device(f.report.name)
          ? "Cut registers per thread (__launch_bounds__, simpler per-thread state) or LDS per block so "
            "more wavefronts fit per CU; in PyTorch this usually means a custom or Triton kernel: tune "
            "num_warps/BLOCK sizes (and waves_per_eu on ROCm). Estimate assumes throughput grows with "
            "occupancy up to 50%."
          : "Cut registers per thread (__launch_bounds__, -maxrregcount, simpler per-thread state) or "
            "shared memory per block so more blocks fit per SM; in PyTorch this usually means a custom or "
            "Triton kernel: tune num_warps/BLOCK sizes. Estimate assumes throughput grows with occupancy "
            "up to 50%.");
}

}  // namespace gpuscope
