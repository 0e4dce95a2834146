// The attention-unfused finding (docs/findings.md): attention written out (q·kᵀ,
// scale, mask, softmax, ·v as separate kernels) where a fused attention kernel (FlashAttention,
// cuDNN SDPA) would keep the T x T score matrix on chip.
//
// What the fused kernel replaces, read from the trace:
// - the score passes: runs of consecutive memory-bound kernels on one stream that contain a
//   plain softmax (scale, mask, dtype casts, softmax, its backward, dropout all read and write
//   the B x H x T x T scores), counted as the run's span on the stream (its kernels, the device
//   sets and copies between them and the idle gaps inside it: a fused kernel has none of them);
// - the score GEMMs: the GEMM kernels just before and after a run (q·kᵀ and P·v forward; dP and
//   dS·k, dSᵀ·q backward), and every other GEMM of the same batched shape (the matmul records,
//   trace.h: the backward's Pᵀ·dY is not next to a run).
// What it adds: its own kernels, which do the same matmul FLOPs with no score-matrix traffic:
// forward 2 GEMMs, backward 5 (FlashAttention-2 recomputes the scores where the unfused backward
// runs 4), half of them when a causal mask is seen being built (the masked blocks are skipped;
// else a full mask is assumed and said), at the rate this trace's other GEMMs of the same type
// achieved (compute-bound: the score GEMMs' own rate includes writing and reading the scores;
// used instead where no other GEMM has a matmul record). Measured against cuDNN's flash kernels
// on the H200 (docs/validation.md) this rate is about twice theirs: they also compute the
// softmax's exponentials, which the estimate does not count.
#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/core.h>

#include "core/findings.h"

namespace gpuscope {
namespace {

double duration(const Kernel* k) { return static_cast<double>(k->end_ns - k->start_ns); }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The attention written out in the window, and what a fused kernel would cost instead.
struct ScorePasses {
  double ns = 0;        // The runs' spans on their streams.
  double fused_ns = 0;  // Time in fused attention kernels already there.
  int64_t softmax_count = 0;
  int64_t forward_runs = 0, backward_runs = 0;
  bool causal = false;  // A causal mask is built in a run (PyTorch's triu_tril_kernel).
  double gemm_ns = 0;   // The score GEMMs.
  int64_t gemm_launches = 0;
  std::optional<double> gemm_flops;          // Of the score GEMMs, where every one has its matmul record.
  std::optional<double> dense_flops_per_ns;  // The other GEMMs' achieved rate in the score GEMMs' type.
  Precision gemm_type = Precision::kUnknown;
  // The matmul work of the fused kernels relative to the score GEMMs': forward 2 GEMMs where the
  // unfused forward runs 2, backward 5 (the scores recomputed) where it runs 4; halved when causal.
  double fused_work() const {
    const double gemms = 2.0 * static_cast<double>(forward_runs) + 4.0 * static_cast<double>(backward_runs);
    if (gemms <= 0) return 0;
    return (2.0 * static_cast<double>(forward_runs) + 5.0 * static_cast<double>(backward_runs)) / gemms *
           (causal ? 0.5 : 1.0);
  }
  // The rate the fused kernels are assumed to run at: the type's dense GEMM rate in this trace
  // (no score traffic), never slower than the score GEMMs themselves.
  bool dense_rate() const {
    return gemm_flops && dense_flops_per_ns && gemm_ns > 0 && *dense_flops_per_ns > *gemm_flops / gemm_ns;
  }
  double fused_est_ns() const {
    return dense_rate() ? *gemm_flops * fused_work() / *dense_flops_per_ns : gemm_ns * fused_work();
  }
  double saved_ns() const { return std::max(0.0, ns + gemm_ns - fused_est_ns()); }
};

// Per-name facts, asked once per distinct name.
struct NameFacts {
  bool softmax = false, backward = false, causal_mask = false;
};
NameFacts name_facts(std::string_view raw) {
  const std::string n = lower(raw);
  NameFacts out;
  out.softmax = is_plain_softmax(raw);
  out.backward = n.find("backward") != std::string::npos || n.find("bwd") != std::string::npos;
  out.causal_mask = n.find("tril") != std::string::npos || n.find("triu") != std::string::npos;
  return out;
}

// The op that launched a GEMM kernel, when it recorded one matrix product (trace.h, Matmul).
struct GemmOp {
  int64_t op = -1;
  const Matmul* matmul = nullptr;
};
GemmOp gemm_op(const FindingContext& f, const Kernel* k) {
  const DeviceContext& d = f.device;
  const int64_t api = d.host.api_for_correlation(k->correlation);
  if (api < 0) return {};
  const int64_t op = d.host.owner_op(static_cast<size_t>(api));
  if (op < 0) return {};
  const HostEvent& e = d.trace.host_events[static_cast<size_t>(op)];
  if (e.num_matmuls != 1) return {};
  return {op, &d.trace.matmuls_of(e).front()};
}

// A product's batch and its three dims sorted: q·kᵀ (T x T x d) and P·v (T x d x T) are one shape.
using GemmShape = std::tuple<int64_t, int64_t, int64_t, int64_t>;
GemmShape gemm_shape(const Matmul& m) {
  std::array<int64_t, 3> dims = {m.m, m.n, m.k};
  std::sort(dims.begin(), dims.end());
  return {m.batch, dims[0], dims[1], dims[2]};
}

// Sets p's score GEMMs: `adjacent` (the GEMM kernels next to a run) and every other batched GEMM
// of one of their shapes; their FLOPs where all have records; the other GEMMs' rate in their type.
void add_score_gemms(const FindingContext& f, std::set<size_t> gemms, ScorePasses& p) {
  const auto& kernels = f.device.kernels;
  std::vector<GemmOp> ops(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (f.categories[i] == KernelCategory::kGemm) ops[i] = gemm_op(f, kernels[i]);
  }
  std::set<GemmShape> shapes;
  Precision type = Precision::kUnknown;
  for (size_t i : gemms) {
    if (!ops[i].matmul || ops[i].matmul->batch <= 1) continue;  // Batch 1: a weight GEMM.
    shapes.insert(gemm_shape(*ops[i].matmul));
    type = ops[i].matmul->dtype;
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (ops[i].matmul && shapes.contains(gemm_shape(*ops[i].matmul))) gemms.insert(i);
  }
  // FLOPs once per op (a split-K GEMM is two kernels of one call); time over its kernels.
  std::set<int64_t> score_ops, other_ops;
  double score_flops = 0, other_flops = 0, other_ns = 0;
  bool all_recorded = true;
  for (size_t i : gemms) {
    p.gemm_ns += duration(kernels[i]);
    all_recorded &= ops[i].matmul != nullptr;
    if (ops[i].matmul && score_ops.insert(ops[i].op).second) score_flops += ops[i].matmul->flops();
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    const GemmOp& g = ops[i];
    if (!g.matmul || score_ops.contains(g.op) || g.matmul->dtype != type) continue;
    other_ns += duration(kernels[i]);
    if (other_ops.insert(g.op).second) other_flops += g.matmul->flops();
  }
  p.gemm_launches = static_cast<int64_t>(gemms.size());
  p.gemm_type = type;
  if (all_recorded && score_flops > 0) p.gemm_flops = score_flops;
  if (type != Precision::kUnknown && other_ns > 0 && other_flops > 0) p.dense_flops_per_ns = other_flops / other_ns;
}

// Attention is a score GEMM, the passes over the scores, and a second GEMM of the same batched
// shape (q·kᵀ then P·v forward: T x T x d both; dP then dS·k backward). A softmax elsewhere (over
// an MLP's logits, for a loss) is not attention, and neither is a run without both GEMMs' shapes
// recorded: not enough evidence. `before` and `after` index f.device.kernels (size() for none).
bool between_score_gemms(const FindingContext& f, size_t before, size_t after) {
  const size_t n = f.device.kernels.size();
  if (before >= n || after >= n) return false;
  if (f.categories[before] != KernelCategory::kGemm || f.categories[after] != KernelCategory::kGemm) return false;
  const GemmOp a = gemm_op(f, f.device.kernels[before]), b = gemm_op(f, f.device.kernels[after]);
  return a.matmul && b.matmul && a.matmul->batch > 1 && gemm_shape(*a.matmul) == gemm_shape(*b.matmul);
}

ScorePasses score_passes(const FindingContext& f) {
  ScorePasses out;
  const auto& kernels = f.device.kernels;
  std::map<int32_t, std::vector<size_t>> by_stream;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (f.categories[i] == KernelCategory::kAttention) out.fused_ns += duration(kernels[i]);
    by_stream[kernels[i]->stream].push_back(i);
  }
  std::map<StringId, NameFacts> facts;
  auto facts_of = [&](StringId name) -> const NameFacts& {
    auto [it, added] = facts.try_emplace(name);
    if (added) it->second = name_facts(f.device.trace.strings.view(name));
    return it->second;
  };
  std::set<size_t> gemms;  // The score GEMMs (indices into kernels).
  auto is_gemm = [&](size_t i) { return f.categories[i] == KernelCategory::kGemm; };
  for (const auto& [stream, idx] : by_stream) {
    for (size_t i = 0; i < idx.size();) {
      size_t j = i;
      int64_t softmaxes = 0, backward = 0;
      bool causal = false;
      while (j < idx.size() &&
             (is_memory_bound(f.categories[idx[j]]) || f.categories[idx[j]] == KernelCategory::kCopySet)) {
        const NameFacts& n = facts_of(kernels[idx[j]]->name);
        softmaxes += n.softmax;
        backward += n.softmax && n.backward;
        causal |= n.causal_mask;
        ++j;
      }
      if (softmaxes > 0 &&
          between_score_gemms(f, i > 0 ? idx[i - 1] : kernels.size(), j < idx.size() ? idx[j] : kernels.size())) {
        out.ns += static_cast<double>(kernels[idx[j - 1]]->end_ns - kernels[idx[i]]->start_ns);
        out.softmax_count += softmaxes;
        (backward > 0 ? out.backward_runs : out.forward_runs) += 1;
        out.causal |= causal;
        if (i > 0 && is_gemm(idx[i - 1])) gemms.insert(idx[i - 1]);
        if (j < idx.size() && is_gemm(idx[j])) gemms.insert(idx[j]);
      }
      i = std::max(j, i + 1);
    }
  }
  add_score_gemms(f, std::move(gemms), out);
  return out;
}

bool attention_fires(const FindingContext& f, const ScorePasses& p) {
  return p.softmax_count > 0 && p.ns > 0.02 * f.window_ns() && p.fused_ns < p.ns;
}

}  // namespace

bool attention_unfused_fires(const FindingContext& f) { return attention_fires(f, score_passes(f)); }

// Trigger: the score passes take over 2% of the window, and fused attention kernels take less
// time than them (else the softmax is something else). Estimate: the score passes and the score
// GEMMs go; the fused kernels add the score GEMMs' FLOPs scaled to what they compute (forward
// 2 GEMMs, backward 5 where the unfused one runs 4; half with evidence of a causal mask) at the
// type's dense GEMM rate in this trace.
std::optional<Finding> attention_unfused(const FindingContext& f) {
  const ScorePasses p = score_passes(f);
  if (!attention_fires(f, p)) return std::nullopt;
  const double steps = f.steps();
  auto per_step = [&](double ns) { return fmt_ms(static_cast<int64_t>(ns / steps)); };
  std::string evidence = fmt::format(
      "{:.0f} softmax kernels per step; the passes over the attention scores around them (scale, mask, casts, "
      "softmax, backward) take {:.1f}% of the window ({} per step) and the score GEMMs {} per step ({:.0f} "
      "launches): the scores make round trips through memory instead of staying in a fused kernel",
      static_cast<double>(p.softmax_count) / steps, pct(p.ns, f.window_ns()), per_step(p.ns), per_step(p.gemm_ns),
      static_cast<double>(p.gemm_launches) / steps);
  const std::string mask =
      p.causal ? "the mask is causal (a tril/triu kernel builds it), so the fused kernels skip half of the blocks"
               : "no causal mask is seen being built (no tril/triu kernel), so a full mask is assumed";
  const std::string rate =
      p.dense_rate()
          ? fmt::format(
                "at the rate this trace's other {} GEMMs achieved ({:.0f} TFLOP/s; the score GEMMs, which also "
                "write and read the scores, {:.0f})",
                precision_name(p.gemm_type), *p.dense_flops_per_ns / 1e3, *p.gemm_flops / p.gemm_ns / 1e3)
          : std::string("at the rate the score GEMMs achieved here");
  // The snippet computes what the model computes: causal only where a causal mask was seen.
  const std::string call = p.causal ? "scaled_dot_product_attention(q, k, v, is_causal=True)"
                                    : "scaled_dot_product_attention(q, k, v, attn_mask=mask) (attn_mask only if "
                                      "the model masks the scores; no causal mask was seen, so not is_causal=True)";
  const std::string advice = fmt::format(
      "Use fused attention: torch.nn.functional.{} "
      "(FlashAttention / cuDNN backends) instead of q @ k.transpose(-2, -1), softmax and @ v. Estimate (est.): "
      "the score passes and the score GEMMs go; the fused kernels, about {} per step, do the same matmul FLOPs "
      "(forward 2 GEMMs, backward 5: FlashAttention-2 recomputes the scores) {}; {}.",
      call, per_step(p.fused_est_ns()), rate, mask);
  // The passes and score GEMMs it removes are matrix and memory-bound kernels.
  const auto paced =
      f.paced_share([&](size_t i) { return is_matrix_math(f.categories[i]) || is_memory_bound(f.categories[i]); });
  evidence += FindingContext::gpu_paced_clause(paced);
  return proposal("Attention materialises its score matrix", std::move(evidence),
                  f.speedup_removing_gpu_time(p.saved_ns(), paced), advice);
}

}  // namespace gpuscope
