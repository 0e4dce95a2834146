#include "input/trace_merge.h"

#include <cstddef>

namespace gpuscope {
namespace {

// A member added to Trace or to an event type must be appended here too, or a trace read
// by several threads would lose it: these sizes make that a compile error, not a silent
// difference between `--threads 1` and the default (parallel_reader_test checks the rest).
// (Sizes under libstdc++ on x86-64, what Debian builds with.)
static_assert(sizeof(Trace) == 592, "a member was added to Trace: append it in append_events if it holds events");
static_assert(sizeof(Kernel) == 88 && sizeof(Memcpy) == 64 && sizeof(Memset) == 56 && sizeof(ApiCall) == 48 &&
                  sizeof(HostEvent) == 48 && sizeof(GpuAnnotation) == 24 && sizeof(OpArg) == 12 &&
                  sizeof(CollectiveArgs) == 80,
              "an event type changed: update append_events");

template <typename T>
size_t append(std::vector<T>& into, const std::vector<T>& from) {
  const size_t first = into.size();
  into.insert(into.end(), from.begin(), from.end());
  return first;
}

int32_t renumber_lane(int32_t lane, const std::vector<StringId>& ids) {
  return -1 - static_cast<int32_t>(ids[static_cast<size_t>(-1 - static_cast<int64_t>(lane))]);
}

template <typename T, typename A, typename B>
void renumber_lanes(std::vector<T>& events, size_t first, const NamedLane& lane, A T::*a, B T::*b,
                    const std::vector<StringId>& ids) {
  T& e = events[first + lane.index];
  if (lane.fields & 1) e.*a = renumber_lane(e.*a, ids);
  if (lane.fields & 2) e.*b = renumber_lane(e.*b, ids);
}

}  // namespace

void append_events(Trace& into, const Trace& batch, const std::vector<NamedLane>& named_lanes) {
  // The batch's strings in its id order: first appearance within the batch, so interning
  // them in turn keeps the order one thread reading everything would have.
  std::vector<StringId> ids(batch.strings.size());
  for (StringId i = 0; i < ids.size(); ++i) ids[i] = into.strings.intern(batch.strings.view(i));

  const uint32_t dims_base = static_cast<uint32_t>(into.dims.size());
  const uint32_t args_base = static_cast<uint32_t>(into.op_args.size());
  const uint32_t matmuls_base = static_cast<uint32_t>(into.matmuls.size());
  for (size_t i = append(into.matmuls, batch.matmuls); i < into.matmuls.size(); ++i) {
    into.matmuls[i].source = ids[into.matmuls[i].source];
  }
  append(into.dims, batch.dims);
  for (size_t i = append(into.op_args, batch.op_args); i < into.op_args.size(); ++i) {
    into.op_args[i].first_dim += dims_base;
    into.op_args[i].dtype = ids[into.op_args[i].dtype];
  }
  const size_t kernels = append(into.kernels, batch.kernels);
  for (size_t i = kernels; i < into.kernels.size(); ++i) into.kernels[i].name = ids[into.kernels[i].name];
  const size_t memcpys = append(into.memcpys, batch.memcpys);
  const size_t memsets = append(into.memsets, batch.memsets);
  const size_t api_calls = append(into.api_calls, batch.api_calls);
  for (size_t i = api_calls; i < into.api_calls.size(); ++i) into.api_calls[i].name = ids[into.api_calls[i].name];
  const size_t host_events = append(into.host_events, batch.host_events);
  for (size_t i = host_events; i < into.host_events.size(); ++i) {
    HostEvent& e = into.host_events[i];
    e.name = ids[e.name];
    if (e.num_args > 0) e.first_arg += args_base;
    if (e.num_matmuls > 0) e.first_matmul += matmuls_base;
  }
  const size_t annotations = append(into.gpu_annotations, batch.gpu_annotations);
  for (size_t i = annotations; i < into.gpu_annotations.size(); ++i) {
    into.gpu_annotations[i].name = ids[into.gpu_annotations[i].name];
  }
  // Collectives: only on numbered devices (the reader keeps none on a named lane).
  for (size_t i = append(into.collectives, batch.collectives); i < into.collectives.size(); ++i) {
    into.collectives[i].name = ids[into.collectives[i].name];
    into.collectives[i].dtype = ids[into.collectives[i].dtype];
  }

  using E = NamedLane::Events;
  for (const NamedLane& lane : named_lanes) {
    switch (lane.events) {
      case E::kKernels:
        renumber_lanes(into.kernels, kernels, lane, &Kernel::device, &Kernel::stream, ids);
        break;
      case E::kMemcpys:
        renumber_lanes(into.memcpys, memcpys, lane, &Memcpy::device, &Memcpy::stream, ids);
        break;
      case E::kMemsets:
        renumber_lanes(into.memsets, memsets, lane, &Memset::device, &Memset::stream, ids);
        break;
      case E::kApiCalls:
        renumber_lanes(into.api_calls, api_calls, lane, &ApiCall::pid, &ApiCall::tid, ids);
        break;
      case E::kHostEvents:
        renumber_lanes(into.host_events, host_events, lane, &HostEvent::pid, &HostEvent::tid, ids);
        break;
      case E::kGpuAnnotations:
        renumber_lanes(into.gpu_annotations, annotations, lane, &GpuAnnotation::device, &GpuAnnotation::device, ids);
        break;
    }
  }
}

}  // namespace gpuscope
