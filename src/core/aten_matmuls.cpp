#include "core/aten_matmuls.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <vector>

#include "core/catalog.h"

namespace gpuscope {
namespace {

using Shape = std::span<const int64_t>;

// The product of dims [from, to); nullopt when one is negative or the product overflows.
std::optional<int64_t> product(Shape s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) {
    if (s[i] < 0 || __builtin_mul_overflow(p, s[i], &p)) return std::nullopt;
  }
  return p;
}

// One product of a [batch] m x k by k x n, or nullopt when a dimension is negative.
std::optional<Matmul> product_of(std::optional<int64_t> batch, int64_t m, int64_t n, int64_t k) {
  if (!batch || *batch < 0 || m < 0 || n < 0 || k < 0) return std::nullopt;
  Matmul p;
  p.batch = *batch;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

std::vector<Matmul> mm(Shape a, Shape b) {  // [M,K] x [K,N]
  if (a.size() != 2 || b.size() != 2) return {};
  if (auto p = product_of(1, a[0], b[1], a[1])) return {*p};
  return {};
}

std::vector<Matmul> bmm(Shape a, Shape b) {  // [B,M,K] x [B,K,N]
  if (a.size() != 3 || b.size() != 3) return {};
  if (auto p = product_of(a[0], a[1], b[2], a[2])) return {*p};
  return {};
}

// torch.matmul semantics: 1-D operands are promoted, batch dimensions broadcast. A 2-D right
// operand is a weight shared by every row: one GEMM of M = all the left operand's rows.
std::vector<Matmul> matmul(Shape a, Shape b) {
  if (a.empty() || b.empty()) return {};
  const int64_t m = a.size() >= 2 ? a[a.size() - 2] : 1;
  const int64_t k = a.back();
  const int64_t n = b.size() >= 2 ? b.back() : 1;
  const auto batch_a = a.size() > 2 ? product(a, 0, a.size() - 2) : std::optional<int64_t>(1);
  const auto batch_b = b.size() > 2 ? product(b, 0, b.size() - 2) : std::optional<int64_t>(1);
  if (!batch_a || !batch_b) return {};
  if (b.size() == 2 && a.size() >= 2 && *batch_a >= 1) {
    int64_t rows = 0;
    if (__builtin_mul_overflow(*batch_a, m, &rows)) return {};
    if (auto p = product_of(1, rows, n, k)) return {*p};
    return {};
  }
  if (auto p = product_of(std::max(*batch_a, *batch_b), m, n, k)) return {*p};
  return {};
}

std::vector<Matmul> linear(Shape input, Shape weight) {  // input [..., K], weight [N, K]
  if (input.empty() || weight.size() != 2) return {};
  if (auto p = product_of(1, 0, weight[0], input.back())) {
    const auto rows = product(input, 0, input.size() - 1);
    if (!rows) return {};
    p->m = *rows;
    return {*p};
  }
  return {};
}

// Scaled dot-product attention: forward QK^T ([T,D] x [D,S]) and PV ([T,S] x [S,Dv]) per batch
// and head; backward the four products of its gradients (dP = dO V^T, dV = P^T dO, dQ = dS K,
// dK = dS^T Q). heads_at_1: layout [B,H,T,D] (the SDPA API); otherwise [B,T,H,D] (the
// flash/efficient kernels' own entry points).
std::vector<Matmul> attention(Shape q, Shape k, Shape v, bool heads_at_1, bool backward) {
  if (q.size() != 4 || k.size() != 4 || v.size() != 4) return {};
  const int64_t t = heads_at_1 ? q[2] : q[1];
  const int64_t s = heads_at_1 ? k[2] : k[1];
  const auto heads = product(q, heads_at_1 ? 1 : 2, heads_at_1 ? 2 : 3);
  const auto batch_heads = product(q, 0, 1);
  if (!heads || !batch_heads) return {};
  int64_t bh = 0;
  if (__builtin_mul_overflow(*batch_heads, *heads, &bh)) return {};
  const int64_t d = q[3], dv = v[3];
  std::vector<std::optional<Matmul>> parts = {product_of(bh, t, s, d), product_of(bh, t, dv, s)};
  if (backward) {
    parts = {product_of(bh, t, s, dv), product_of(bh, s, dv, t), product_of(bh, t, d, s), product_of(bh, s, d, t)};
  }
  std::vector<Matmul> out;
  for (const auto& p : parts) {
    if (!p) return {};
    out.push_back(*p);
  }
  return out;
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

// The products of an op in the family and the argument whose dtype is the A operand's.
std::vector<Matmul> products(const Trace& trace, const HostEvent& op, size_t* a_arg) {
  const std::string_view name = trace.strings.view(op.name);
  auto arg = [&](size_t i) { return op_arg_shape(trace, op, i); };
  *a_arg = 0;
  if (name == "aten::mm") return mm(arg(0), arg(1));
  if (name == "aten::bmm") return bmm(arg(0), arg(1));
  if (name == "aten::matmul") return matmul(arg(0), arg(1));
  if (name == "aten::linear") return linear(arg(0), arg(1));
  *a_arg = 1;  // The bias (or input) comes first.
  if (name == "aten::addmm") return mm(arg(1), arg(2));
  if (name == "aten::baddbmm") return bmm(arg(1), arg(2));
  for (const AttentionOp& a : kAttentionOps) {
    if (a.name != name) continue;
    // Backward ops take grad_out first, then q, k, v.
    *a_arg = a.backward ? 1 : 0;
    return attention(arg(*a_arg), arg(*a_arg + 1), arg(*a_arg + 2), a.heads_at_1, a.backward);
  }
  return {};
}

}  // namespace

std::span<const int64_t> op_arg_shape(const Trace& trace, const HostEvent& op, size_t i) {
  if (i >= op.num_args) return {};
  const OpArg& a = trace.op_args[op.first_arg + i];
  return {trace.dims.data() + a.first_dim, a.rank};
}

void add_aten_matmuls(Trace& trace, HostEvent& op) {
  if (op.kind != HostEventKind::kOp || op.num_args == 0) return;
  size_t a_arg = 0;
  std::vector<Matmul> found = products(trace, op, &a_arg);
  if (found.empty()) return;
  const Precision dtype = a_arg < op.num_args
                              ? precision_from_dtype(trace.strings.view(trace.op_args[op.first_arg + a_arg].dtype))
                              : Precision::kUnknown;
  op.first_matmul = static_cast<uint32_t>(trace.matmuls.size());
  op.num_matmuls = static_cast<uint16_t>(found.size());
  for (Matmul& m : found) {
    m.dtype = dtype;
    m.source = op.name;
    trace.matmuls.push_back(m);
  }
}

}  // namespace gpuscope
