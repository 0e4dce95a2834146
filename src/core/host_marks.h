// What the Python bootstrap's marks say, parsed in one place (names and keys: run_protocol.h).
// Host marks, "gpuscope.host#k1=v1,k2=v2" with integer values, are facts about the process: its
// data loading, its process group, and the trace window (which the bootstrap opens, closes or
// caps). Stack samples, "gpuscope.py#<tag>;<frames>", name the program's own lines. Everything
// else reads these structs, never the mark text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/trace.h"

namespace gpuscope {

// The value of `key=<digits>` in a mark's text after its prefix ("k1=v1,k2=v2"), or null (no
// such field, or no digits).
std::optional<int64_t> mark_field(std::string_view fields, std::string_view key);

// The trace window as the bootstrap left it: the one owner of that state. Each value is the
// largest any mark of the trace gives (several processes' marks may share a trace); null where
// no mark has it.
struct WindowMarks {
  // As a --steps window opened: the median untraced step on the host, and the optimizer steps
  // before it (training, even where the window's steps replay a CUDA graph).
  std::optional<int64_t> untraced_step_us;
  std::optional<int64_t> optimizer_steps;
  // As it closed: the same median on the GPU's timeline.
  std::optional<int64_t> untraced_device_step_us;
  // A --steps window opened by time: its length, and why (no step source; a loop too fast).
  std::optional<int64_t> time_window_us;
  bool no_steps = false;
  std::optional<int64_t> loop_period_ns;  // The step loop's period where it was too fast to mark.
  // A plain run's trace stopped: after this many steps, or this long after a loop too fast to
  // mark was found.
  std::optional<int64_t> capped_after_steps;
  std::optional<int64_t> capped_after_us;

  // The program's own step measured before the window, the longer of host and GPU (a host
  // that runs ahead ends its steps sooner than the GPU finishes them); null without either.
  std::optional<int64_t> untraced_step_ns() const;
};

// What the marks say about data loading in the main process. The one-off values come from the
// first mark (in the trace's string table) that has them.
struct LoaderMarks {
  std::optional<int64_t> cpus;           // CPUs the process may use.
  std::optional<int64_t> torch_threads;  // torch's intra-op threads at the first batch built here.
  std::optional<int64_t> workers;        // The loader's worker processes, where it has them.
  // A forked copy's time per batch on one thread (the first mark with a positive value), and the
  // batches it timed.
  std::optional<int64_t> one_thread_us;
  int64_t one_thread_batches = 0;
  // Its CPU time per batch, every thread of the copy (a thread pool outside torch shows here).
  std::optional<int64_t> one_thread_cpu_us;
  // The copy's DataLoader with the advised workers: the time between its batches (the first mark
  // with positive time and workers), its workers and the batches received.
  std::optional<int64_t> pool_us;
  int64_t pool_workers = 0, pool_batches = 0;
  // Per batch built in the main process, by mark name (a zero-length annotation at the batch's
  // end): its CPU time of all threads and its wall time, in microseconds.
  std::unordered_map<StringId, std::pair<int64_t, int64_t>> batch_cpu_wall_us;
};

// PyTorch's caching allocator, as the bootstrap read it where the trace ended (and as a --steps
// window opened).
struct AllocatorMarks {
  std::optional<int64_t> retries;          // Its retries since the process began (num_alloc_retries).
  std::optional<int64_t> retries_at_open;  // The same as a --steps window opened.
  bool uncached = false;                   // PYTORCH_NO_CUDA_MEMORY_CACHING turned it off.
  bool expandable = false;                 // Expandable segments were on.

  // Its retries while traced: since the window opened, or since the process began where the
  // whole run was traced; null without the end mark.
  std::optional<int64_t> traced_retries() const;
};

struct HostMarks {
  LoaderMarks loader;
  AllocatorMarks allocator;
  std::optional<int64_t> dist_world_size;  // The default process group's size (largest).
  bool dist_gloo = false;                  // Its CUDA tensors' collectives run on gloo.
  WindowMarks window;
};

// Every host mark of the trace (its string table: marks are interned names), parsed.
HostMarks parse_host_marks(const Trace& trace);

// A stack sample's name, "gpuscope.py#<tag>;<frames>": whether a data-loading frame was on the
// stack (tag "data").
bool py_sample_in_data_loading(std::string_view mark_name);
// "data;a.py:3 f|b.py:9 g" (with or without the prefix) -> "a.py:3 f (Python)": the innermost
// frame of the program's own code, or "" when the sample has none.
std::string py_sample_label(std::string_view mark_name);

}  // namespace gpuscope
