// Reading the traces of a job (one per rank) several at a time within a memory budget
// Each trace is handed, on the thread that read it, to the caller's function (which
// analyses it) and dropped afterwards, so memory holds only the traces in flight.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/trace.h"
#include "input/input_source.h"

namespace gpuscope {

// Counters a progress line reads while the traces are read (any thread may read them).
struct JobProgress {
  explicit JobProgress(size_t files) : bytes_read(files), events_read(files) {}
  std::vector<std::atomic<uint64_t>> bytes_read;  // Per file: file bytes consumed so far.
  std::vector<std::atomic<int64_t>> events_read;  // Per file: JSON events read so far.
  std::atomic<size_t> files_started{0};
  std::atomic<size_t> files_done{0};
};

struct JobReadOptions {
  InputLimits limits;
  // Threads in all (0: the machine's cores). Files are read min(files, threads) at a time
  // (fewer when the memory budget says so), each with threads / (files in flight) threads.
  unsigned threads = 0;
  // Memory budget for the traces in flight (estimated, estimated_read_bytes); 0:
  // default_memory_budget(). One trace is always read, whatever its estimate.
  uint64_t max_memory_bytes = 0;
  JobProgress* progress = nullptr;
};

// Half of what the machine has available now (MemAvailable), at least 256 MiB; 4 GiB when it
// cannot be read.
uint64_t default_memory_budget();

// The memory reading and analysing the trace at `path` is expected to take: 0.4 times its
// JSON size (docs/validation.md: 0.24 for reading and 0.37 with the analysis), plus
// buffers. The JSON size of a gzip file is taken from its trailer (the size of its last member
// modulo 4 GiB) when that is larger than the file, else 10 times the file.
uint64_t estimated_read_bytes(const std::string& path);

// Reads `paths` ("-" for stdin allowed, read like a file) and calls `consume(i, trace or error)`
// once for each, concurrently from several threads; returns after every call has returned.
void read_traces(const std::vector<std::string>& paths, const JobReadOptions& options,
                 const std::function<void(size_t, StatusOr<Trace>)>& consume);

}  // namespace gpuscope
