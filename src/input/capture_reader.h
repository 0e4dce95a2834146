// Reader for gpuscope capture files (written by libgpuscope_inject.so; format in
// capture_format.h). Turns one capture (one traced process) into a core Trace.
//
// Contract:
// - A capture is read up to its last complete chunk: a torn last chunk (the process was killed
//   mid-write) or a corrupt chunk is skipped with a line in Trace::warnings, never an error.
//   Errors are reserved for files that are not captures or whose header is unusable, and for
//   inputs past the inflate limit. Error messages start with the file's name; warnings do not
//   (Trace::source names the file wherever they are shown).
// - GEMM calls recorded by the cuBLAS interposer become HostEvents of kind kOp named for their
//   entry point ("cublasLtMatmul", "cublasGemmEx"), each with one Matmul record (trace.h: m, n,
//   k, batch, the A operand's precision), from which the core counts FLOPs and precision.
// - NVTX ranges and marks become kAnnotation HostEvents. The reader only decodes: steps are
//   found by the core (core/steps.h, one set of step-name rules for every input, and
//   --step-range honoured).
// - Streaming: the file is read through a window holding at most one chunk, so memory follows
//   the events decoded, not the file's size. The total inflated across chunks is bounded by
//   InputLimits (input_source.h): past it the read is an error naming the limit and the flag.
// - Times: every event and device sample satisfies the contract of event_time.h; records
//   breaking it are dropped with a warning naming the first one's chunk and record offset.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "core/trace.h"
#include "input/input_source.h"

namespace gpuscope {

// True when `first_bytes` (at least the first 8 bytes of a file) start with the capture magic.
bool looks_like_capture(std::string_view first_bytes);

StatusOr<Trace> read_capture_file(const std::string& path, const InputLimits& limits = {});

// Same from an opened source (a file, pipe or stdin); `name` names it in messages.
StatusOr<Trace> read_capture_source(ByteSource& source, const std::string& name, const InputLimits& limits = {});

// Same as read_capture_file for bytes already in memory; `source` names them in messages.
StatusOr<Trace> read_capture_bytes(std::string_view bytes, const std::string& source);

}  // namespace gpuscope
