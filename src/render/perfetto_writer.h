// Writes traces as Chrome/Perfetto trace-event JSON, viewable in ui.perfetto.dev.
//
// Layout: one process track per traced process (API calls and host events by thread), one
// process track per GPU of each trace ("GPU <device>", kernels/copies/sets by stream), flow
// arrows from each launch call to its kernel (by correlation id), and the device samples as
// counter tracks on the GPU tracks. With the analyses of the traces (PerfettoOptions::reports),
// each GPU track also gets a "steps" thread (one slice per analysed step, "step N") and an
// "idle causes" thread (one slice per idle interval, named by its cause: core/report.h
// IdleInterval). Timestamps are microseconds (exact to the nanosecond) on
// the traces' host clock, so several processes line up.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/report.h"
#include "core/status.h"
#include "core/trace.h"

namespace gpuscope {

struct PerfettoOptions {
  // The analysis of each trace (core/analysis.h analyze_trace), parallel to `traces`; empty:
  // no steps or idle-cause tracks.
  std::vector<std::vector<DeviceReport>> reports;
  // A time window on the traces' host clock (ns): only events overlapping [from_ns, to_ns)
  // are written (slices crossing an edge are kept whole). Unset: no bound on that side.
  std::optional<int64_t> from_ns;
  std::optional<int64_t> to_ns;
  // Process labels by pid, where known; else "<executable> (pid <pid>)" from the trace's
  // command line (captures record it; arguments are left out: they can hold secrets), else
  // "process <pid>".
  std::map<int64_t, std::string> process_names;
};

// The output is always valid JSON: a counter value that is NaN or infinite is written as null,
// and one line in `warnings` (when given) says how many and where. Names that are not valid
// UTF-8 have each bad sequence replaced by U+FFFD, as in the JSON report (report_json.cpp).
void write_perfetto_json(const std::vector<Trace>& traces, std::ostream& out,
                         std::vector<std::string>* warnings = nullptr, const PerfettoOptions& options = {});

// Writes to `path` ("-" for stdout); gzip-compressed when `path` ends in ".gz". A file is
// written as write_output_file writes (output_file.h): atomically, never over one of `inputs`,
// a special or read-only file, nor through a symlink. Error: one line naming the file.
Status write_perfetto_file(const std::vector<Trace>& traces, const std::string& path,
                           const std::vector<std::string>& inputs, std::vector<std::string>* warnings = nullptr,
                           const PerfettoOptions& options = {});

}  // namespace gpuscope
