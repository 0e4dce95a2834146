// Opening what the user names on the command line: files or directories of traces, in any
// format gpuscope reads (PyTorch profiler JSON / JSON.gz, gpuscope capture files).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/trace.h"

namespace gpuscope {

// Expands directories into the trace files they hold (sorted by name, not recursive).
// Errors name the path: missing, unreadable, or a directory without traces.
StatusOr<std::vector<std::string>> expand_trace_paths(const std::vector<std::string>& paths);

// Reads one trace file, choosing the reader by the file's first bytes.
// `progress` (may be empty) is called with (bytes read, total file bytes).
StatusOr<Trace> read_trace_file(const std::string& path,
                                const std::function<void(uint64_t, uint64_t)>& progress = {});

}  // namespace gpuscope
