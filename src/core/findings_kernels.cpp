// The findings about kernels themselves (precision, fusion, grid sizes, occupancy). Each rule's
// comment gives its trigger and its estimate; docs/design.md, "Findings", has them all.
#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "core/findings.h"
#include "core/occupancy.h"

namespace gpuscope {
namespace {

double duration(const Kernel* k) { return static_cast<double>(k->end_ns - k->start_ns); }

bool is_matrix(KernelCategory c) { return c == KernelCategory::kGemm || c == KernelCategory::kAttention; }

}  // namespace

// Trigger: over 10% of GEMM/attention time in fp32 or tf32. Estimate: GEMMs speed up by the
// ratio of the device's dense bf16 peak to its fp32 (or tf32) peak; without a known device, 4x
// for fp32 and 2x for tf32.
std::optional<Finding> precision_fp32(const FindingContext& f) {
  const auto& kernels = f.device.kernels;
  int64_t gemm_ns = 0, slow_ns = 0, fp32_ns = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (!is_matrix(f.categories[i])) continue;
    const int64_t d = kernels[i]->end_ns - kernels[i]->start_ns;
    gemm_ns += d;
    if (f.precisions[i] == Precision::kFp32 || f.precisions[i] == Precision::kTf32) slow_ns += d;
    if (f.precisions[i] == Precision::kFp32) fp32_ns += d;
  }
  if (gemm_ns <= 0 || slow_ns <= 0.1 * gemm_ns) return std::nullopt;
  double fp32_factor = 4, tf32_factor = 2;
  if (const auto bf16 = peak_tflops(f.report.name, Precision::kBf16)) {
    if (const auto fp32 = peak_tflops(f.report.name, Precision::kFp32)) fp32_factor = *bf16 / *fp32;
    if (const auto tf32 = peak_tflops(f.report.name, Precision::kTf32)) tf32_factor = *bf16 / *tf32;
  }
  const double saved = static_cast<double>(fp32_ns) * (1 - 1.0 / fp32_factor) +
                       static_cast<double>(slow_ns - fp32_ns) * (1 - 1.0 / tf32_factor);
  return proposal(
      "Matrix math runs in fp32/tf32, not on bf16 tensor cores",
      fmt::format("{} of {} GEMM/attention time per step ({:.0f}%) is fp32 or tf32",
                  fmt_ms(static_cast<int64_t>(static_cast<double>(slow_ns) / f.steps())),
                  fmt_ms(static_cast<int64_t>(static_cast<double>(gemm_ns) / f.steps())), pct(slow_ns, gemm_ns)),
      f.speedup_removing(saved),
      fmt::format("Train in mixed precision: wrap the forward pass in torch.autocast(\"cuda\", "
                  "dtype=torch.bfloat16) (or set torch.backends.cuda.matmul.allow_tf32=True as a first step). "
                  "Estimate assumes fp32 GEMMs become {:.1f}x and tf32 {:.1f}x faster (dense peak ratios); "
                  "elementwise kernels, which also move half the bytes in bf16, are not counted.",
                  fp32_factor, tf32_factor));
}

// Trigger: at least 100 optimizer kernels per step, mostly not multi-tensor ones. Estimate: a
// fused optimizer does the same arithmetic in a few bandwidth-bound passes; assume it takes a
// quarter of the per-tensor kernel time and none of its launch gaps.
namespace {
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
}  // namespace

// Trigger: 100+ optimizer kernels per step, mostly not multi-tensor.
bool optimizer_unfused_fires(const FindingContext& f) {
  const OptimizerKernels o = optimizer_kernels(f);
  return static_cast<double>(o.kernels) / f.steps() >= 100 && o.multi * 2 < o.kernels;
}

// Estimate: a fused optimizer does the same arithmetic in a few bandwidth-bound passes: a
// quarter of the per-tensor kernel time, and none of the GPU idle inside the optimizer step
// (the host issuing one small kernel per tensor).
std::optional<Finding> optimizer_unfused(const FindingContext& f) {
  if (!optimizer_unfused_fires(f)) return std::nullopt;
  const OptimizerKernels o = optimizer_kernels(f);
  const double opt_per_step = static_cast<double>(o.kernels) / f.steps();
  const double idle_ns = static_cast<double>(f.idle(IdleCauseId::kLaunch).optimizer_ns +
                                             f.idle(IdleCauseId::kHost).optimizer_ns);
  return proposal(
      "The optimizer runs one small kernel per tensor",
      fmt::format("{:.0f} optimizer kernels per step, {} of kernel time and {} of GPU idle per step inside the "
                  "optimizer step, {} multi-tensor",
                  opt_per_step, fmt_ms(static_cast<int64_t>(static_cast<double>(o.ns) / f.steps())),
                  fmt_ms(static_cast<int64_t>(idle_ns / f.steps())), o.multi),
      f.speedup_removing(0.75 * static_cast<double>(o.ns) + idle_ns),
      "Use a fused optimizer: torch.optim.AdamW(params, fused=True) (or foreach=True). Estimate assumes the "
      "fused step takes a quarter of the per-tensor kernel time and leaves the GPU no idle time inside it.");
}

// Trigger: the fusion candidates (fusion.h) would save over 2% of the window. Estimate: a fused
// chain of k kernels costs one kernel's time.
std::optional<Finding> kernel_fusion(const FindingContext& f) {
  const auto& fusion = f.report.fusion;
  int64_t fusion_saving = 0;
  for (const auto& c : fusion) fusion_saving += c.est_saving_ns;
  if (fusion.empty() || fusion_saving <= 0.02 * f.window_ns()) return std::nullopt;
  const auto& top = fusion.front();
  std::string chain;
  for (size_t i = 0; i < top.kernels.size() && i < 4; ++i) chain += (i ? " -> " : "") + top.kernels[i];
  if (top.kernels.size() > 4) chain += fmt::format(" -> ... ({} kernels)", top.kernels.size());
  return proposal("Chains of memory-bound kernels could be fused",
                  fmt::format("{} recurring chains of elementwise/normalisation kernels; the largest: {} ({} times, "
                              "{:.1f}% of the window)",
                              fusion.size(), chain, top.occurrences, top.pct),
                  f.speedup_removing(static_cast<double>(fusion_saving)),
                  "Fuse elementwise chains: torch.compile(model), or fused kernels (fused LayerNorm, bias+GELU, "
                  "dropout+residual+LayerNorm). Estimate assumes a fused chain of k kernels costs one kernel's time.");
}

// Materialised attention: plain softmax kernels (manual q·kᵀ → softmax → ·v) where a fused
// attention kernel would keep the score matrix on chip. Trigger: softmax kernels over 2% of the
// window, and fused attention kernels take less time than them (else the softmax is something
// else). Estimate: the softmax passes disappear.
std::optional<Finding> attention_unfused(const FindingContext& f) {
  const auto& kernels = f.device.kernels;
  double softmax_ns = 0, fused_ns = 0;
  int64_t softmax_count = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (f.categories[i] == KernelCategory::kAttention) {
      fused_ns += duration(kernels[i]);
    } else if (is_plain_softmax(f.device.trace.strings.view(kernels[i]->name))) {
      softmax_ns += duration(kernels[i]);
      ++softmax_count;
    }
  }
  if (softmax_ns <= 0.02 * f.window_ns() || fused_ns >= softmax_ns) return std::nullopt;
  return proposal(
      "Attention materialises its score matrix",
      fmt::format("{:.0f} softmax kernels per step, {:.1f}% of the window: the attention scores make a round "
                  "trip through memory (forward and backward) instead of staying in a fused kernel",
                  static_cast<double>(softmax_count) / f.steps(), pct(softmax_ns, f.window_ns())),
      f.speedup_removing(softmax_ns),
      "Use fused attention: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True) "
      "(FlashAttention / cuDNN backends) instead of q @ k.transpose(-2, -1), softmax and @ v. Estimate: "
      "the softmax passes disappear; the score GEMMs are assumed to cost the same inside the fused "
      "kernel (it also skips masked causal blocks, which is not counted).");
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
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Kernel* k = kernels[i];
    const double d = duration(k);
    busy += d;
    if (!k->has_grid() || f.categories[i] == KernelCategory::kCommunication) continue;
    const double g = static_cast<double>(k->grid.volume());
    if (g >= sms) continue;
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
  return proposal("Kernels launch fewer blocks than the GPU has SMs",
                  fmt::format("{:.0f}% of kernel time is SM capacity left idle by grids smaller than {} SMs "
                              "(SM-active estimate {:.1f}% vs busy {:.1f}%)",
                              pct(lost, busy), *dev->num_sms, f.report.sm_active_est_pct, f.report.busy_pct),
                  f.speedup_removing(saved),
                  "Give each kernel more parallel work: a larger batch or sequence, fewer but larger tensors, more "
                  "blocks per kernel (split the work), or torch.compile to fuse small ops. Estimate: the same work "
                  "spread over every SM, throughput growing with resident warps up to 50% occupancy.");
}

// Trigger: over 10% of kernel time in non-matrix kernels whose registers or shared memory
// allow under 25% theoretical occupancy (GEMM and attention kernels run at low occupancy by
// design and are excluded). Estimate: a bandwidth-bound kernel's throughput grows with
// resident warps up to ~50%.
std::optional<Finding> low_occupancy(const FindingContext& f) {
  const Device* dev = f.device.device;
  if (!dev || !dev->max_threads_per_sm || !dev->regs_per_sm) return std::nullopt;
  const auto& kernels = f.device.kernels;
  double kernel_ns = 0, starved_ns = 0, saved_ns = 0;
  int64_t by_regs = 0, by_smem = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const double d = duration(kernels[i]);
    kernel_ns += d;
    if (is_matrix(f.categories[i])) continue;
    const auto occ = theoretical_occupancy(*dev, *kernels[i]);
    if (!occ || occ->fraction >= 0.25 || occ->limiter == OccupancyLimiter::kThreads) continue;
    starved_ns += d;
    saved_ns += d * (1.0 - occ->fraction / 0.5);
    (occ->limiter == OccupancyLimiter::kRegisters ? by_regs : by_smem) += 1;
  }
  if (kernel_ns <= 0 || starved_ns <= 0.1 * kernel_ns) return std::nullopt;
  return proposal("Kernels keep too few warps resident to hide memory latency",
                  fmt::format("{:.0f}% of kernel time runs at under 25% theoretical occupancy, limited by {} ({} "
                              "launches by registers, {} by shared memory)",
                              pct(starved_ns, kernel_ns), by_regs >= by_smem ? "registers" : "shared memory",
                              by_regs, by_smem),
                  f.speedup_removing(saved_ns),
                  "Cut registers per thread (__launch_bounds__, -maxrregcount, simpler per-thread state) or shared "
                  "memory per block so more blocks fit per SM; in PyTorch this usually means a custom or Triton "
                  "kernel: tune num_warps/BLOCK sizes. Estimate assumes throughput grows with occupancy up to 50%.");
}

}  // namespace gpuscope
