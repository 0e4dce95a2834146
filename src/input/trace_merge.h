// Appending a trace read apart (one batch of events parsed in a worker thread) to the trace
// being built, so that the result equals what one thread reading both in order would build:
// the same events in the same order, the same string ids (interned in order of first
// appearance), the same shape arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "core/trace.h"

namespace gpuscope {

// Chrome traces may name a process or thread lane by a string ("pid": "Spans"); the reader
// stores such a lane as -1 - (string id). A batch's string ids are its own, so it lists the
// fields that hold one, to be renumbered on appending. Numeric lanes (negative ones included)
// are never listed and never changed.
struct NamedLane {
  enum class Events : uint8_t { kKernels, kMemcpys, kMemsets, kApiCalls, kHostEvents, kGpuAnnotations };
  Events events = Events::kKernels;
  // Which of the event's two lane fields hold a string id: bit 0 the first (device or pid),
  // bit 1 the second (stream or tid).
  uint8_t fields = 0;
  uint32_t index = 0;  // Into the batch's vector.
};

// Appends the event vectors, op arguments and dims of `batch` to `into`, renumbering its
// string ids and named lanes. Only the event data: devices, rank, warnings and the rest are
// the caller's.
void append_events(Trace& into, const Trace& batch, const std::vector<NamedLane>& named_lanes);

}  // namespace gpuscope
