// Idle attribution: every idle moment of the window goes to one cause (docs/design.md, "Idle
// attribution"), and the window is drawn as a strip of letters.
#pragma once

#include <optional>

#include "core/device_context.h"
#include "core/report.h"

namespace gpuscope {

// Sets r.idle_pct, r.idle_causes (one per cause, in IdleCauseId order), r.timeline and, where
// the trace carries a measured tracing cost, r.tracing_cost and r.untraced_window_est_ns.
// Needs r.busy_pct and r.window_ns.
void add_idle_attribution(const DeviceContext& ctx, DeviceReport& r);

// Of the window's kernel time, the share after which the GPU had its next kernel already:
// the next kernel started before this one ended (another stream) or its launch call had
// returned by then. Elsewhere the GPU ran a kernel as soon as the host launched it and then
// waited for the host, so a shorter kernel there only lengthens that wait. Null where fewer
// than half of the kernels' launch calls are in the trace.
std::optional<double> gpu_paced_share(const DeviceContext& ctx);

}  // namespace gpuscope
