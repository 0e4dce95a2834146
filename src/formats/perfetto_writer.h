// Writes traces as Chrome/Perfetto trace-event JSON, viewable in ui.perfetto.dev.
//
// Layout: one process track per traced process (API calls and host events by thread), one
// process track per GPU of each trace ("GPU <device>", kernels/copies/sets by stream), flow
// arrows from each launch call to its kernel (by correlation id), and the device samples as
// counter tracks on the GPU tracks. Timestamps are microseconds (exact to the nanosecond) on
// the traces' host clock, so several processes line up.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/trace.h"

namespace gpuscope {

// The output is always valid JSON: a counter value that is NaN or infinite is written as null,
// and one line in `warnings` (when given) says how many and where.
void write_perfetto_json(const std::vector<Trace>& traces, std::ostream& out,
                         std::vector<std::string>* warnings = nullptr);

// Writes to `path` ("-" for stdout). Error: the file cannot be written.
Status write_perfetto_file(const std::vector<Trace>& traces, const std::string& path,
                           std::vector<std::string>* warnings = nullptr);

}  // namespace gpuscope
