// Reader for PyTorch profiler (Kineto) traces: Chrome trace JSON, plain or gzipped.
//
// Streams the file: events are found in a bounded buffer and parsed in batches, so memory
// holds the resulting Trace (compact value events) but never the whole JSON text. With
// threads (KinetoReadOptions::threads), gzip is inflated in a thread of its own and the
// batches are parsed by worker threads, then appended in order: the Trace is the same as with
// one thread, string ids included (docs/validation.md, "Performance").
//
// Errors: a Status whose message is one line naming the problem and, where known, the byte
// offset in the uncompressed JSON. A partly readable trace (truncated, events with
// unexpected field types) is returned with Trace::warnings saying what was skipped.
//
// Limits: the input is inflated within InputLimits (input_source.h); one JSON value larger than
// 16 MiB (or --max-inflate) is an error. Bytes after the JSON, a gzip without its trailer and
// data after the last gzip member are read and reported as warnings.
//
// Times: every event handed to the core satisfies the contract of event_time.h (times within
// +-3e18 ns, durations under 1e15 ns, end computed without overflow); events outside it are
// dropped with a warning naming the first one's byte offset. Numbers that do not fit int64 are
// never cast (a double outside the range is treated as a field of unexpected type).
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "core/status.h"
#include "core/trace.h"
#include "input/input_source.h"

namespace gpuscope {

struct KinetoReadOptions {
  // Called now and then with (uncompressed bytes read so far, compressed bytes read so far).
  std::function<void(uint64_t, uint64_t)> progress;
  // When set, holds the number of JSON events read so far, updated every few thousand.
  std::atomic<int64_t>* events_read = nullptr;
  InputLimits limits;
  // Threads for one trace: 1 reads on the calling thread alone; N > 1 inflates gzip in one
  // thread and parses batches of events in N - 1 others (inputs under a few MiB are read on
  // the calling thread); 0: as many as the machine has cores. The trace is the same whatever
  // the number.
  unsigned threads = 0;
  // JSON bytes per batch of events handed to a parsing thread (0: 1 MiB). Tests make it small.
  size_t batch_bytes = 0;
};

// GPUSCOPE_THREADS: 0 when unset (as many as cores), or an error naming the variable.
StatusOr<unsigned> threads_from_environment();

// Reads from an opened source (a file, pipe or stdin whose first bytes may already have been
// looked at through source.head()); `name` names it in messages.
StatusOr<Trace> read_kineto_source(ByteSource& source, const std::string& name, const KinetoReadOptions& options = {});

StatusOr<Trace> read_kineto_file(const std::string& path, const KinetoReadOptions& options = {});
// Same, from a buffer holding the JSON text (plain or gzip), named `source` in messages.
StatusOr<Trace> read_kineto_buffer(std::string_view json, const std::string& source);
StatusOr<Trace> read_kineto_buffer(std::string_view json, const std::string& source, const KinetoReadOptions& options);

}  // namespace gpuscope
