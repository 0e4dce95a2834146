// Opening what the user names on the command line: files or directories of traces, in any
// format gpuscope reads (PyTorch profiler JSON / JSON.gz, gpuscope capture files).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/trace.h"
#include "input/input_source.h"

namespace gpuscope {

// Expands directories into the trace files they hold (sorted by name, not recursive); "-"
// (stdin) passes through. Errors name the path: missing, a symlink loop, unreadable, or a
// directory without traces.
StatusOr<std::vector<std::string>> expand_trace_paths(const std::vector<std::string>& paths);

// Reads one trace, choosing the reader by its first bytes. `path` may be a file, a pipe or
// FIFO (`<(zcat trace.json.gz)`), or "-" for stdin: it is opened once and never reopened.
// `progress` (may be empty) is called with (bytes read, total file bytes; 0 for pipes).
// Limits from the environment (GPUSCOPE_MAX_INFLATE, GPUSCOPE_INPUT_TIMEOUT) unless given.
StatusOr<Trace> read_trace_file(const std::string& path, const std::function<void(uint64_t, uint64_t)>& progress = {});
StatusOr<Trace> read_trace_file(const std::string& path, const InputLimits& limits,
                                const std::function<void(uint64_t, uint64_t)>& progress = {});

struct TraceReadOptions {
  InputLimits limits;
  unsigned threads = 0;  // For a PyTorch trace: KinetoReadOptions::threads.
  // (bytes read, total file bytes; 0 for pipes), now and then.
  std::function<void(uint64_t, uint64_t)> progress;
  std::atomic<int64_t>* events_read = nullptr;  // KinetoReadOptions::events_read.
};
StatusOr<Trace> read_trace_file(const std::string& path, const TraceReadOptions& options);
// The same for an input already opened (its head() chooses the reader); `name` is its source.
StatusOr<Trace> read_trace_source(ByteSource& source, const std::string& name, const TraceReadOptions& options);

}  // namespace gpuscope
