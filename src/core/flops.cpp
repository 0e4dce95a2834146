#include "core/flops.h"

#include <array>
#include <charconv>
#include <cmath>
#include <span>

#include <fmt/core.h>

namespace gpuscope {
namespace {

using Shape = std::span<const int64_t>;


double product(Shape s, size_t from, size_t to) {
  double p = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) p *= static_cast<double>(s[i]);
  return p;
}

std::optional<double> mm(Shape a, Shape b) {  // [M,K] x [K,N]
  if (a.size() != 2 || b.size() != 2) return std::nullopt;
  return 2.0 * a[0] * a[1] * b[1];
}

std::optional<double> bmm(Shape a, Shape b) {  // [B,M,K] x [B,K,N]
  if (a.size() != 3 || b.size() != 3) return std::nullopt;
  return 2.0 * a[0] * a[1] * a[2] * b[2];
}

// torch.matmul semantics: 1-D operands are promoted, batch dimensions broadcast.
std::optional<double> matmul(Shape a, Shape b) {
  if (a.empty() || b.empty()) return std::nullopt;
  const double m = a.size() >= 2 ? static_cast<double>(a[a.size() - 2]) : 1.0;
  const double k = static_cast<double>(a.back());
  const double n = b.size() >= 2 ? static_cast<double>(b.back()) : 1.0;
  const double batch_a = a.size() > 2 ? product(a, 0, a.size() - 2) : 1.0;
  const double batch_b = b.size() > 2 ? product(b, 0, b.size() - 2) : 1.0;
  return 2.0 * std::max(batch_a, batch_b) * m * n * k;
}

std::optional<double> linear(Shape input, Shape weight) {  // input [..., K], weight [N, K]
  if (input.empty() || weight.size() != 2) return std::nullopt;
  return 2.0 * product(input, 0, input.size() - 1) * input.back() * weight[0];
}

// Scaled dot-product attention forward: QK^T (2·B·H·T·S·D) plus PV (2·B·H·T·S·Dv).
// heads_at_1: layout [B,H,T,D] (the SDPA API); otherwise [B,T,H,D] (the flash/efficient
// kernels' own entry points).
std::optional<double> attention(Shape q, Shape k, Shape v, bool heads_at_1) {
  if (q.size() != 4 || k.size() != 4 || v.size() != 4) return std::nullopt;
  const double s = heads_at_1 ? static_cast<double>(k[2]) : static_cast<double>(k[1]);
  const double rows = product(q, 0, 3);  // B·H·T in either layout.
  return 2.0 * rows * s * q[3] + 2.0 * rows * s * v[3];
}

struct AttentionOp {
  std::string_view name;
  bool backward;
  bool heads_at_1;
};
constexpr std::array<AttentionOp, 11> kAttentionOps = {{
    {"aten::scaled_dot_product_attention", false, true},
    {"aten::_scaled_dot_product_flash_attention", false, true},
    {"aten::_scaled_dot_product_efficient_attention", false, true},
    {"aten::_scaled_dot_product_cudnn_attention", false, true},
    {"aten::_scaled_dot_product_flash_attention_backward", true, true},
    {"aten::_scaled_dot_product_efficient_attention_backward", true, true},
    {"aten::_scaled_dot_product_cudnn_attention_backward", true, true},
    {"aten::_flash_attention_forward", false, false},
    {"aten::_efficient_attention_forward", false, false},
    {"aten::_flash_attention_backward", true, false},
    {"aten::_efficient_attention_backward", true, false},
}};

const AttentionOp* find_attention(std::string_view name) {
  for (const auto& a : kAttentionOps) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

}  // namespace

bool is_matmul_op(std::string_view name) {
  return name == "aten::mm" || name == "aten::addmm" || name == "aten::bmm" ||
         name == "aten::baddbmm" || name == "aten::matmul" || name == "aten::linear" ||
         find_attention(name) != nullptr;
}

std::optional<double> matmul_flops(const Trace& trace, const HostEvent& op) {
  if (op.kind != HostEventKind::kOp || op.num_args == 0) return std::nullopt;
  const std::string_view name = trace.strings.view(op.name);
  auto arg = [&](size_t i) { return op_arg_shape(trace, op, i); };
  if (name == "aten::mm") return mm(arg(0), arg(1));
  if (name == "aten::addmm") return mm(arg(1), arg(2));
  if (name == "aten::bmm") return bmm(arg(0), arg(1));
  if (name == "aten::baddbmm") return bmm(arg(1), arg(2));
  if (name == "aten::matmul") return matmul(arg(0), arg(1));
  if (name == "aten::linear") return linear(arg(0), arg(1));
  if (const AttentionOp* a = find_attention(name)) {
    // Backward ops take grad_out first, then q, k, v; backward is counted as 2x forward.
    const size_t q = a->backward ? 1 : 0;
    auto f = attention(arg(q), arg(q + 1), arg(q + 2), a->heads_at_1);
    if (f && a->backward) *f *= 2.0;
    return f;
  }
  return std::nullopt;
}

double ModelSpec::flops_per_token() const {
  const double head_dim = heads > 0 ? static_cast<double>(dmodel) / static_cast<double>(heads) : 0.0;
  return 6.0 * params + 12.0 * static_cast<double>(layers) * static_cast<double>(heads) * head_dim *
                            static_cast<double>(seq);
}

std::string ModelSpec::formula() const {
  return fmt::format(
      "training FLOPs per token = 6N + 12*L*H*Q*T (PaLM appendix B) with N={:.4g}, L={}, H={}, "
      "Q={}, T={} = {:.4g}; x {} tokens per step",
      params, layers, heads, heads > 0 ? dmodel / heads : 0, seq, flops_per_token(), batch * seq);
}

StatusOr<ModelSpec> parse_model_spec(std::string_view spec) {
  const std::string_view kPrefix = "gpt:";
  auto usage = [&](std::string_view what) {
    return Status::error(fmt::format(
        "--model '{}': {}; expected e.g. gpt:params=124M,layers=12,heads=12,dmodel=768,seq=1024,"
        "batch=16",
        spec, what));
  };
  if (!spec.starts_with(kPrefix)) return usage("only the 'gpt:' family is known");
  ModelSpec m;
  std::string_view rest = spec.substr(kPrefix.size());
  int seen = 0;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return usage(fmt::format("'{}' is not key=value", item));
    const std::string_view key = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    double scale = 1;
    if (!value.empty()) {
      switch (value.back()) {
        case 'K': case 'k': scale = 1e3; break;
        case 'M': case 'm': scale = 1e6; break;
        case 'B': case 'G': case 'g': scale = 1e9; break;
        case 'T': case 't': scale = 1e12; break;
        default: break;
      }
      if (scale != 1) value.remove_suffix(1);
    }
    double number = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (ec != std::errc() || ptr != value.data() + value.size() || !(number > 0) ||
        !std::isfinite(number)) {
      return usage(fmt::format("'{}' needs a positive number", key));
    }
    number *= scale;
    auto as_int = [&](int64_t& out) { out = static_cast<int64_t>(std::llround(number)); };
    if (key == "params") m.params = number, seen |= 1;
    else if (key == "layers") as_int(m.layers), seen |= 2;
    else if (key == "heads") as_int(m.heads), seen |= 4;
    else if (key == "dmodel") as_int(m.dmodel), seen |= 8;
    else if (key == "seq") as_int(m.seq), seen |= 16;
    else if (key == "batch") as_int(m.batch), seen |= 32;
    else return usage(fmt::format("unknown key '{}'", key));
  }
  if (seen != 63) return usage("params, layers, heads, dmodel, seq and batch are all required");
  return m;
}

std::span<const int64_t> op_arg_shape(const Trace& trace, const HostEvent& op, size_t i) {
  if (i >= op.num_args) return {};
  const OpArg& a = trace.op_args[op.first_arg + i];
  return {trace.dims.data() + a.first_dim, a.rank};
}

}  // namespace gpuscope
