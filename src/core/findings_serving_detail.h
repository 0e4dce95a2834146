// What the serving findings' files share (findings_serving.cpp defines these).
#pragma once

#include <cstdint>
#include <optional>

#include "core/findings.h"

namespace gpuscope::serving_detail {

// Inference: the steps are forward passes, or nothing in the trace trains.
bool is_inference(const FindingContext& f);

// y[M,N] = x[M,K] · W[K,N]: a host op's one matmul record with a shared (weight) B operand.
struct WeightGemm {
  int64_t m = 0, n = 0, k = 0;
  Precision dtype = Precision::kUnknown;  // Of the token operand, as its reader recorded it.
  StringId source = 0;                    // The op or call, as the report names it.
};
std::optional<WeightGemm> weight_gemm(const Trace& t, const HostEvent& op);

}  // namespace gpuscope::serving_detail
