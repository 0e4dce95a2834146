// What the findings on GEMM shapes share (findings_serving.cpp defines these): the serving
// findings' files, and precision-fp32's roofline ratio for GEMMs of known shape.
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

// The weight GEMM that launched window kernel i (its owner op's matmul record), or nullopt:
// not a GEMM kernel, no launch record, or no shape (a CUDA graph's replayed kernels have none).
std::optional<WeightGemm> kernel_weight_gemm(const FindingContext& f, size_t i);

// The GEMM's time on this device's roofline in math type p, in seconds: its FLOPs at p's dense
// peak or its operands and output, once each in p's element size, at the memory's peak,
// whichever is longer. nullopt where either peak is not known.
std::optional<double> gemm_roof_s(const FindingContext& f, const WeightGemm& g, Precision p);

}  // namespace gpuscope::serving_detail
