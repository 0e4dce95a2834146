// The trace model: what every collector (PyTorch profiler reader, capture reader, CUPTI
// injection) produces and every analysis consumes.
//
// Contract:
// - Events are value structs in flat vectors, one vector per kind. No virtual objects.
// - All timestamps are int64 nanoseconds on the host clock of the traced process (the clock
//   of the host-side events; GPU timestamps are expected to be converted to it by the
//   collector). Intervals are half-open [start_ns, end_ns).
// - Strings (kernel names, op names, dtypes) are interned in `Trace::strings`; events hold
//   StringIds.
// - A value a collector could not observe is std::optional and left empty, never 0.
// - No NVIDIA headers here: this is the analysis core.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/device_sample.h"
#include "core/precision.h"

namespace gpuscope {

using StringId = uint32_t;

// Interns strings; ids are dense and stable for the life of the table. Id 0 is "".
class StringTable {
 public:
  StringTable();
  StringId intern(std::string_view s);
  std::string_view view(StringId id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  // A deque never moves its elements, so the map can key on views into them.
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, StringId> ids_;
};

struct Device {
  int32_t id = 0;  // CUDA ordinal as the collector saw it.
  std::string name;
  std::optional<int32_t> num_sms;
  std::optional<int32_t> cc_major;
  std::optional<int32_t> cc_minor;
  std::optional<uint64_t> memory_bytes;
  std::optional<int32_t> max_threads_per_sm;
  std::optional<int32_t> regs_per_sm;
  std::optional<int32_t> shared_mem_per_sm_bytes;
};

struct Dim3 {
  uint32_t x = 0, y = 0, z = 0;
  uint64_t volume() const { return uint64_t{x} * y * z; }
};

struct Kernel {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t device = 0;
  int32_t stream = 0;
  StringId name = 0;
  Dim3 grid;   // All zero when unknown.
  Dim3 block;  // All zero when unknown.
  std::optional<int32_t> registers_per_thread;
  std::optional<int32_t> shared_memory_bytes;  // Static + dynamic, per block.
  std::optional<uint64_t> correlation;         // Links to ApiCall::correlation.
  bool has_grid() const { return grid.volume() > 0; }
};

enum class CopyKind : uint8_t { kUnknown, kHtoD, kDtoH, kDtoD, kHtoH, kPtoP };
enum class HostMemory : uint8_t { kUnknown, kPageable, kPinned };

struct Memcpy {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t device = 0;
  int32_t stream = 0;
  CopyKind kind = CopyKind::kUnknown;
  HostMemory host_memory = HostMemory::kUnknown;
  std::optional<uint64_t> bytes;
  std::optional<uint64_t> correlation;
};

struct Memset {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t device = 0;
  int32_t stream = 0;
  std::optional<uint64_t> bytes;
  std::optional<uint64_t> correlation;
};

// What a host CUDA API call does, for idle attribution. Derived from the name by
// classify_api() so every collector agrees.
enum class ApiClass : uint8_t {
  kOther,
  kLaunch,  // Kernel or graph launch.
  kMemcpy,  // Copies and sets issued from the host (sync or async).
  kAlloc,   // Device or pinned-host allocation and free.
  kSync,    // Blocks the host until the device (or a stream or event) is done.
};

struct ApiCall {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t pid = 0;
  int32_t tid = 0;
  StringId name = 0;
  ApiClass api_class = ApiClass::kOther;
  bool driver = false;  // Driver API (cu*) rather than runtime (cuda*).
  std::optional<uint64_t> correlation;
};

// One tensor argument of a CPU op as the profiler recorded it (record_shapes=True).
struct OpArg {
  uint32_t first_dim = 0;  // Index into Trace::dims.
  uint16_t rank = 0;       // 0 for scalars and non-tensors.
  StringId dtype = 0;      // As recorded ("float", "c10::BFloat16"); 0 when absent.
};

// One matrix product a host op performed, as its reader saw it: C[batch] = A[batch] · B[batch]
// with A m x k and B k x n. Filled by every reader that knows shapes (the Kineto reader from
// PyTorch op shapes, aten_matmuls.h; the capture reader from interposed cuBLAS calls); the FLOP
// counter, the precision mix and the GEMM-shape findings read these, never op names.
// A GEMM whose B operand is one matrix shared by all rows (a weight) has batch 1 and M the
// rows (for x[B, T, K] · W[K, N]: m = B·T).
struct Matmul {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;                      // Independent products of this shape (bmm, heads).
  Precision dtype = Precision::kUnknown;  // Of the A operand, as recorded.
  StringId source = 0;                    // The op or call it came from: "aten::addmm", "cublasGemmEx".
  double flops() const {                  // 2·m·n·k multiply-adds per product.
    return 2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

enum class HostEventKind : uint8_t {
  kOp,          // Framework operator (aten::mm, autograd nodes).
  kAnnotation,  // User annotation (record_function, NVTX range, ProfilerStep#N).
};

struct HostEvent {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t pid = 0;
  int32_t tid = 0;
  StringId name = 0;
  HostEventKind kind = HostEventKind::kOp;
  uint32_t first_arg = 0;     // Index into Trace::op_args.
  uint16_t num_args = 0;      // 0 when shapes were not recorded.
  uint32_t first_matmul = 0;  // Index into Trace::matmuls.
  uint16_t num_matmuls = 0;   // The matrix products the op performed (0: none known).
};

// An annotation placed on a GPU timeline (Kineto's gpu_user_annotation).
struct GpuAnnotation {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t device = 0;
  StringId name = 0;
};

enum class StepSource : uint8_t {
  kProfilerStep,   // ProfilerStep#N annotations.
  kNvtxRange,      // Named NVTX / user ranges (e.g. "train_step").
  kOptimizerStep,  // Bounded by repeated optimizer.step annotations.
  kPythonLoop,     // No optimizer: iterations of the program's step loop (gpuscope.iter# ranges).
  kForwardPass,    // Captures of older gpuscope: each outermost forward starts one.
  kKernelPattern,  // No markers: the period of a kernel that recurs once per iteration.
  kWholeWindow,    // No step markers: the whole trace is one step.
};

// What tracing adds to the host's cost of one kernel launch call, measured on the traced host
// when the trace was taken (`gpuscope run` runs gpuscope-calibrate plain and traced). A tracer
// slows every launch call, so a program whose GPU waits on launches runs slower traced than
// it does on its own; the analysis takes this cost out of launch-gated idle time.
struct TracingCost {
  double plain_launch_ns = 0;   // Median host ns per launch call, untraced.
  double traced_launch_ns = 0;  // The same under the tracer.
  double added_ns() const { return traced_launch_ns > plain_launch_ns ? traced_launch_ns - plain_launch_ns : 0.0; }
};

// A collective's description as the profiler wrote it on a communication kernel (Kineto's
// "Collective name", "In msg nelems", "Out msg nelems", "dtype", "Group size" args, PyTorch
// 2.1+). Times are the kernel's; communication.cpp matches it to the kernel by device and start.
struct CollectiveArgs {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t device = 0;
  StringId name = 0;   // "allreduce", "allgather", "reduce_scatter", "broadcast", ...
  StringId dtype = 0;  // "Float", "BFloat16", ...; 0 when absent.
  std::optional<int64_t> in_nelems, out_nelems, group_size;
};

struct Step {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t number = 0;
};

struct Trace {
  std::string source;  // File the trace came from, for messages.
  std::optional<int32_t> rank;
  std::optional<int32_t> world_size;
  // The traced process's command line, arguments joined by spaces, where the input records it
  // (captures); empty otherwise. Other users' text: it may hold secrets and any bytes.
  std::string command_line;
  std::vector<Device> devices;
  std::vector<Kernel> kernels;
  std::vector<Memcpy> memcpys;
  std::vector<Memset> memsets;
  std::vector<ApiCall> api_calls;
  std::vector<HostEvent> host_events;
  std::vector<GpuAnnotation> gpu_annotations;
  std::vector<CollectiveArgs> collectives;   // Sizes of communication kernels, where recorded.
  std::vector<DeviceSample> device_samples;  // Hardware counters sampled during the trace.
  std::optional<TracingCost> tracing_cost;   // Measured by `gpuscope run`; absent elsewhere.
  std::vector<OpArg> op_args;
  std::vector<int64_t> dims;
  std::vector<Matmul> matmuls;  // Of host events (HostEvent::first_matmul).
  StringTable strings;
  std::vector<std::string> warnings;  // What the reader skipped, one line each.
  // Work on an accelerator other than a CUDA or ROCm GPU that the input records and gpuscope does
  // not analyse ("1234 mtia_ccp_events events"); empty otherwise.
  std::string other_accelerator;
  bool truncated = false;  // The input ended early; events after that are missing.

  const Device* find_device(int32_t id) const;
  std::span<const Matmul> matmuls_of(const HostEvent& e) const {
    return {matmuls.data() + e.first_matmul, e.num_matmuls};
  }
  // Sorts every event vector by start time (then end), as the analyses require.
  void sort_events();
};

// Classifies a CUDA runtime or driver API name ("cudaLaunchKernel", "cuMemAlloc_v2").
ApiClass classify_api(std::string_view name);

}  // namespace gpuscope
