// Builds small synthetic traces for tests. Times are in microseconds for readability and
// stored as nanoseconds.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/aten_matmuls.h"
#include "core/trace.h"

namespace gpuscope::testing {

class TraceBuilder {
 public:
  explicit TraceBuilder(int num_sms = 100, std::string name = "NVIDIA H100 80GB HBM3") {
    device(0, num_sms, std::move(name));
  }

  TraceBuilder& device(int32_t id, int num_sms, std::string name) {
    Device d;
    d.id = id;
    d.name = std::move(name);
    d.num_sms = num_sms;
    t_.devices.push_back(d);
    return *this;
  }

  // A kernel with a launch call on the host thread (tid) `launch_us` long, ending just
  // before the kernel may start. Returns the correlation id.
  uint64_t kernel(double start_us, double end_us, std::string_view name, uint32_t blocks = 1000, int32_t device = 0,
                  int32_t stream = 7, double launch_at_us = -1, double launch_us = 5, int32_t tid = 1) {
    const uint64_t corr = next_corr_++;
    Kernel k;
    k.start_ns = ns(start_us);
    k.end_ns = ns(end_us);
    k.device = device;
    k.stream = stream;
    k.name = t_.strings.intern(name);
    k.grid = {blocks, 1, 1};
    k.block = {256, 1, 1};
    k.correlation = corr;
    t_.kernels.push_back(k);
    const double at = launch_at_us >= 0 ? launch_at_us : start_us - launch_us;
    api(at, at + launch_us, "cudaLaunchKernel", tid, corr);
    return corr;
  }

  TraceBuilder& api(double start_us, double end_us, std::string_view name, int32_t tid = 1,
                    std::optional<uint64_t> corr = std::nullopt) {
    ApiCall c;
    c.start_ns = ns(start_us);
    c.end_ns = ns(end_us);
    c.pid = 1;
    c.tid = tid;
    c.name = t_.strings.intern(name);
    c.api_class = classify_api(name);
    c.correlation = corr;
    t_.api_calls.push_back(c);
    return *this;
  }

  TraceBuilder& memcpy(double start_us, double end_us, CopyKind kind = CopyKind::kHtoD,
                       HostMemory mem = HostMemory::kPageable, int32_t device = 0, uint64_t bytes = 1 << 20,
                       std::optional<uint64_t> corr = std::nullopt) {
    Memcpy m;
    m.correlation = corr;
    m.start_ns = ns(start_us);
    m.end_ns = ns(end_us);
    m.device = device;
    m.kind = kind;
    m.host_memory = mem;
    m.bytes = bytes;
    t_.memcpys.push_back(m);
    return *this;
  }

  // A host op; shapes/dtypes give recorded inputs.
  TraceBuilder& op(double start_us, double end_us, std::string_view name, std::vector<std::vector<int64_t>> shapes = {},
                   std::string_view dtype = "", int32_t tid = 1) {
    HostEvent e;
    e.start_ns = ns(start_us);
    e.end_ns = ns(end_us);
    e.pid = 1;
    e.tid = tid;
    e.name = t_.strings.intern(name);
    e.kind = HostEventKind::kOp;
    if (!shapes.empty()) {
      e.first_arg = static_cast<uint32_t>(t_.op_args.size());
      e.num_args = static_cast<uint16_t>(shapes.size());
      for (const auto& s : shapes) {
        OpArg a;
        a.first_dim = static_cast<uint32_t>(t_.dims.size());
        a.rank = static_cast<uint16_t>(s.size());
        a.dtype = dtype.empty() ? 0 : t_.strings.intern(dtype);
        t_.dims.insert(t_.dims.end(), s.begin(), s.end());
        t_.op_args.push_back(a);
      }
    }
    add_aten_matmuls(t_, e);  // As the Kineto reader does.
    t_.host_events.push_back(e);
    return *this;
  }

  TraceBuilder& annotation(double start_us, double end_us, std::string_view name, int32_t tid = 1) {
    HostEvent e;
    e.start_ns = ns(start_us);
    e.end_ns = ns(end_us);
    e.pid = 1;
    e.tid = tid;
    e.name = t_.strings.intern(name);
    e.kind = HostEventKind::kAnnotation;
    t_.host_events.push_back(e);
    return *this;
  }

  Trace build() {
    Trace t = std::move(t_);
    t.source = "synthetic";
    t.sort_events();
    return t;
  }

  static int64_t ns(double us) { return static_cast<int64_t>(us * 1000.0 + 0.5); }
  // A fresh correlation id, for a copy and its API call.
  uint64_t correlation() { return next_corr_++; }

 private:
  Trace t_;
  uint64_t next_corr_ = 1;
};

}  // namespace gpuscope::testing
