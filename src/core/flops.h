// FLOP counting: matmul FLOPs from the trace's matmul records, and model FLOPs from a model spec.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/trace.h"

namespace gpuscope {

// FLOPs of the matrix products a host op performed (its Matmul records, trace.h): 2·m·n·k per
// product. nullopt when the op has none (not a matmul, or its reader saw no shapes).
std::optional<double> matmul_flops(const Trace& trace, const HostEvent& op);

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
