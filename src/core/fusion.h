// Fusion candidates: recurring chains of memory-bound kernels.
#pragma once

#include <vector>

#include "core/catalog.h"
#include "core/device_context.h"
#include "core/report.h"
#include "core/steps.h"

namespace gpuscope {

// Per stream, runs of >= 2 consecutive memory-bound kernels (categories per
// DeviceContext::kernels), broken by anything else and at step boundaries, grouped by their
// kernel names; groups that recur, largest estimated saving first, at most five.
std::vector<FusionCandidate> fusion_candidates(const DeviceContext& ctx, const std::vector<KernelCategory>& categories,
                                               const std::vector<Step>& steps);

}  // namespace gpuscope
