// Steps, FLOPs per step, the peak they are measured against, MFU and HFU.
#pragma once

#include "core/analysis.h"
#include "core/device_context.h"
#include "core/report.h"
#include "core/steps.h"

namespace gpuscope {

// Sets the step fields of r (source, count, per-step reports, mean step time), matmul FLOPs per
// step counted from op shapes, model FLOPs per step from `options`, the peak and MFU/HFU.
// Needs r.name, r.precision and r.window_ns.
void add_steps_and_mfu(const DeviceContext& ctx, const StepDetection& steps, const AnalysisOptions& options,
                       DeviceReport& r);

}  // namespace gpuscope
