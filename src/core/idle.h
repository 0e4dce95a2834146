// Idle attribution: every idle moment of the window goes to one cause (docs/design.md, "Idle
// attribution"), and the window is drawn as a strip of letters.
#pragma once

#include "core/device_context.h"
#include "core/report.h"

namespace gpuscope {

// Sets r.idle_pct, r.idle_causes (one per cause, in IdleCauseId order), r.timeline and, where
// the trace carries a measured tracing cost, r.tracing_cost and r.untraced_window_est_ns.
// Needs r.busy_pct and r.window_ns.
void add_idle_attribution(const DeviceContext& ctx, DeviceReport& r);

}  // namespace gpuscope
