// FLOP counting: matmul FLOPs from recorded op shapes, and model FLOPs from a model spec.
#pragma once

#include <span>

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/trace.h"

namespace gpuscope {

// The dims of argument i of a host op with recorded shapes (empty when not recorded).
std::span<const int64_t> op_arg_shape(const Trace& trace, const HostEvent& op, size_t i);

// FLOPs of one host op from its recorded input shapes, for the matmul family:
// aten::mm, addmm, bmm, baddbmm, matmul, linear (2·m·n·k per product) and scaled-dot-product
// attention forward (4·B·H·T·S·D: QK^T and PV, no causal discount, as the PaLM convention) and
// backward (2x forward). nullopt when the op is not in the family or shapes are missing.
std::optional<double> matmul_flops(const Trace& trace, const HostEvent& op);
bool is_matmul_op(std::string_view name);

// A model described on the command line:
//   gpt:params=124M,layers=12,heads=12,dmodel=768,seq=1024,batch=16
// Model FLOPs per token for training: 6N + 12·L·H·Q·T (PaLM appendix B), Q = dmodel/heads.
struct ModelSpec {
  double params = 0;
  int64_t layers = 0, heads = 0, dmodel = 0, seq = 0, batch = 0;
  double flops_per_token() const;
  double flops_per_step() const { return flops_per_token() * static_cast<double>(batch * seq); }
  std::string formula() const;  // Human-readable, with the numbers substituted.
};
StatusOr<ModelSpec> parse_model_spec(std::string_view spec);

}  // namespace gpuscope
