// Fusion candidates: recurring chains of memory-bound kernels.
#pragma once

#include <string>
#include <vector>

#include "core/catalog.h"
#include "core/device_context.h"
#include "core/report.h"
#include "core/steps.h"

namespace gpuscope {

// Per stream, runs of >= 2 consecutive memory-bound kernels (categories per
// DeviceContext::kernels), broken by anything else and at step boundaries, grouped by their
// kernel names; groups that recur, largest estimated saving first, at most five.
// The share of `names` (kernel names, raw or short) that Triton generated: torch.compile /
// Inductor output, or hand-written Triton.
double triton_share(const std::vector<std::string>& names);

// Chains mostly of Triton kernels (triton_share > 0.5) are left out: already fused.
std::vector<FusionCandidate> fusion_candidates(const DeviceContext& ctx, const std::vector<KernelCategory>& categories,
                                               const std::vector<Step>& steps);

}  // namespace gpuscope
