// Idle attribution: every idle moment of the window goes to one cause (docs/design.md, "Idle
// attribution"), and the window is drawn as a strip of letters.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device_context.h"
#include "core/report.h"

namespace gpuscope {

// Sets r.idle_pct, r.idle_causes (one per cause, in IdleCauseId order), r.timeline and, where
// the trace carries a measured tracing cost, r.tracing_cost and r.untraced_window_est_ns.
// Needs r.busy_pct and r.window_ns.
void add_idle_attribution(const DeviceContext& ctx, DeviceReport& r);

// For each kernel of the window (DeviceContext::kernels), whether the GPU had its next kernel
// already when it ended: 1 when the next kernel started before it ended (another stream) or
// its launch call had returned by then, 0 when the GPU then waited for the host's next launch
// (a shorter kernel there only lengthens that wait), -1 where unknown (the last kernel, or a
// next kernel whose launch call is not in the trace).
std::vector<int8_t> gpu_paced_kernels(const DeviceContext& ctx);

}  // namespace gpuscope
