// Reader for PyTorch profiler (Kineto) traces: Chrome trace JSON, plain or gzipped.
//
// Streams the file: events are parsed one at a time from a bounded buffer, so memory holds
// the resulting Trace (compact value events) but never the whole JSON text.
//
// Errors: a Status whose message is one line naming the problem and, where known, the byte
// offset in the uncompressed JSON. A partly readable trace (truncated, events with
// unexpected field types) is returned with Trace::warnings saying what was skipped.
#pragma once

#include <functional>
#include <string>

#include "core/status.h"
#include "core/trace.h"

namespace gpuscope {

struct KinetoReadOptions {
  // Called now and then with (uncompressed bytes read so far, compressed bytes read so far).
  std::function<void(uint64_t, uint64_t)> progress;
};

StatusOr<Trace> read_kineto_file(const std::string& path, const KinetoReadOptions& options = {});
// Same, from a buffer holding the (uncompressed) JSON text, named `source` in messages.
StatusOr<Trace> read_kineto_buffer(std::string_view json, const std::string& source);

}  // namespace gpuscope
