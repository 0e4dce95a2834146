#include "render/perfetto_writer.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/core.h>
#include <unistd.h>
#include <zlib.h>

#include "core/catalog.h"
#include "render/json_text.h"
#include "render/output_file.h"

namespace gpuscope {

namespace {

// Microseconds with three decimals, exact for int64 nanoseconds.
void micros(std::string& out, int64_t ns) {
  char buf[40];
  // The magnitude as unsigned: negating INT64_MIN would overflow.
  uint64_t magnitude = static_cast<uint64_t>(ns);
  if (ns < 0) {
    out.push_back('-');
    magnitude = 0 - magnitude;
  }
  std::snprintf(buf, sizeof(buf), "%" PRIu64 ".%03" PRIu64, magnitude / 1000, magnitude % 1000);
  out += buf;
}

// Thread ids of the analysis tracks on a GPU process: above any stream id a trace carries.
constexpr int64_t kStepsTid = 2'000'000'000;
constexpr int64_t kIdleTid = 2'000'000'001;

class JsonEvents {
 public:
  explicit JsonEvents(std::ostream& out) : out_(out) { out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"; }
  ~JsonEvents() { out_ << "\n]}\n"; }

  void complete(std::string_view name, std::string_view cat, int64_t pid, int64_t tid, int64_t start_ns, int64_t end_ns,
                const std::string& args = {}) {
    head("X", {}, name, cat, pid, tid, start_ns);
    buf_ += ",\"dur\":";
    // Readers guarantee times within +-3e18 ns (input/event_time.h), so this cannot overflow.
    micros(buf_, end_ns > start_ns ? end_ns - start_ns : 0);
    if (!args.empty()) buf_ += ",\"args\":{" + args + "}";
    end();
  }
  void instant(std::string_view name, std::string_view cat, int64_t pid, int64_t tid, int64_t ts_ns) {
    head("i", "t", name, cat, pid, tid, ts_ns);
    end();
  }
  void flow(bool start, uint64_t id, int64_t pid, int64_t tid, int64_t ts_ns) {
    begin();
    buf_ += start ? "{\"ph\":\"s\"" : "{\"ph\":\"f\",\"bp\":\"e\"";
    buf_ += ",\"name\":\"launch\",\"cat\":\"correlation\",\"id\":" + std::to_string(id);
    ids(pid, tid);
    ts(ts_ns);
    end();
  }
  void counter(std::string_view name, int64_t pid, int64_t ts_ns, double value) {
    begin();
    buf_ += "{\"ph\":\"C\",\"name\":";
    append_json_string(buf_, name);
    ids(pid, 0);
    ts(ts_ns);
    buf_ += ",\"args\":{\"value\":";
    if (!append_json_number(buf_, value) && non_finite_++ == 0) first_non_finite_ = std::string(name);
    buf_ += "}";
    end();
  }
  void name(bool process, int64_t pid, int64_t tid, std::string_view value, int64_t sort) {
    begin();
    buf_ += process ? "{\"ph\":\"M\",\"name\":\"process_name\"" : "{\"ph\":\"M\",\"name\":\"thread_name\"";
    ids(pid, tid);
    buf_ += ",\"args\":{\"name\":";
    append_json_string(buf_, value);
    buf_ += "}";
    end();
    begin();
    buf_ += process ? "{\"ph\":\"M\",\"name\":\"process_sort_index\"" : "{\"ph\":\"M\",\"name\":\"thread_sort_index\"";
    ids(pid, tid);
    buf_ += ",\"args\":{\"sort_index\":" + std::to_string(sort) + "}";
    end();
  }

 private:
  // {"ph":"<ph>"[,"s":"<scope>"],"name":<name>,"cat":<cat>,"pid":..,"tid":..,"ts":.. (left open).
  void head(std::string_view ph, std::string_view scope, std::string_view name, std::string_view cat, int64_t pid,
            int64_t tid, int64_t ts_ns) {
    begin();
    buf_ += "{\"ph\":\"";
    buf_ += ph;
    buf_ += '"';
    if (!scope.empty()) {
      buf_ += ",\"s\":\"";
      buf_ += scope;
      buf_ += '"';
    }
    buf_ += ",\"name\":";
    append_json_string(buf_, name);
    buf_ += ",\"cat\":";
    append_json_string(buf_, cat);
    ids(pid, tid);
    ts(ts_ns);
  }
  void ts(int64_t ns) {
    buf_ += ",\"ts\":";
    micros(buf_, ns);
  }
  void begin() {
    if (!first_) buf_ += ",\n";
    first_ = false;
  }
  void ids(int64_t pid, int64_t tid) { buf_ += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid); }
  void end() {
    buf_.push_back('}');
    if (buf_.size() > (1 << 20)) {
      out_ << buf_;
      buf_.clear();
    }
  }

 public:
  void flush() {
    out_ << buf_;
    buf_.clear();
  }
  // Counter values that were NaN or infinite, written as null.
  size_t non_finite() const { return non_finite_; }
  const std::string& first_non_finite() const { return first_non_finite_; }

 private:
  std::ostream& out_;
  std::string buf_;
  bool first_ = true;
  size_t non_finite_ = 0;
  std::string first_non_finite_;
};

const char* copy_kind_name(CopyKind k) {
  switch (k) {
    case CopyKind::kHtoD:
      return "Memcpy HtoD";
    case CopyKind::kDtoH:
      return "Memcpy DtoH";
    case CopyKind::kDtoD:
      return "Memcpy DtoD";
    case CopyKind::kHtoH:
      return "Memcpy HtoH";
    case CopyKind::kPtoP:
      return "Memcpy PtoP";
    default:
      return "Memcpy";
  }
}

// Events overlapping the window (PerfettoOptions::from_ns/to_ns); an instant at the window's
// start is inside.
struct Window {
  std::optional<int64_t> from_ns, to_ns;
  bool overlaps(int64_t start_ns, int64_t end_ns) const {
    return (!from_ns || end_ns > *from_ns || start_ns >= *from_ns) && (!to_ns || start_ns < *to_ns);
  }
};

// The analysis tracks of one GPU: its steps and its idle intervals by cause.
void write_analysis(const DeviceReport& r, int64_t pid, const Window& window, JsonEvents& json) {
  json.name(false, pid, kStepsTid, "steps", -2);
  json.name(false, pid, kIdleTid, "idle causes", -1);
  for (const StepReport& s : r.steps) {
    if (!window.overlaps(s.start_ns, s.start_ns + s.duration_ns)) continue;
    std::string args = "\"busy %\":";
    append_json_number(args, s.busy_pct);
    if (s.matmul_flops) {
      args += ",\"matmul FLOPs\":";
      append_json_number(args, *s.matmul_flops);
    }
    json.complete("step " + std::to_string(s.number), "step", pid, kStepsTid, s.start_ns, s.start_ns + s.duration_ns,
                  args);
  }
  for (const IdleInterval& i : r.idle_intervals) {
    if (!window.overlaps(i.start_ns, i.end_ns)) continue;
    json.complete(idle_cause_name(i.cause), "idle", pid, kIdleTid, i.start_ns, i.end_ns);
  }
}

// The executable's base name in a command line ("/usr/bin/python3 train.py" -> "python3"): what
// names a process by default, as in `top` (the arguments can hold secrets).
std::string_view executable_name(std::string_view command_line) {
  std::string_view first = command_line.substr(0, command_line.find(' '));
  const size_t slash = first.rfind('/');
  return slash == std::string_view::npos ? first : first.substr(slash + 1);
}

void write_trace(const Trace& t, size_t index, const PerfettoOptions& options, JsonEvents& json) {
  const Window window{options.from_ns, options.to_ns};
  // Host pid: the traced process id when known (several traces may come from one run).
  int64_t host_pid = 0;
  if (!t.api_calls.empty()) host_pid = t.api_calls.front().pid;
  if (host_pid == 0 && !t.host_events.empty()) host_pid = t.host_events.front().pid;
  if (host_pid == 0) host_pid = static_cast<int64_t>(index + 1);
  auto gpu_pid = [&](int32_t device) { return int64_t{1'000'000'000} + host_pid * 100 + device; };

  auto known = options.process_names.find(host_pid);
  const std::string_view exe = executable_name(t.command_line);
  std::string label = known != options.process_names.end() ? known->second
                      : exe.empty()                        ? "process " + std::to_string(host_pid)
                                    : std::string(exe) + " (pid " + std::to_string(host_pid) + ")";
  if (t.rank) label += " (rank " + std::to_string(*t.rank) + ")";
  json.name(true, host_pid, 0, label, static_cast<int64_t>(index * 100));
  std::set<int32_t> devices;
  for (const auto& k : t.kernels) devices.insert(k.device);
  for (const auto& m : t.memcpys) devices.insert(m.device);
  for (const auto& s : t.device_samples) devices.insert(s.device);
  const std::vector<DeviceReport>* reports = index < options.reports.size() ? &options.reports[index] : nullptr;
  if (reports) {
    for (const DeviceReport& r : *reports) devices.insert(r.device);
  }
  for (int32_t d : devices) {
    std::string name = "GPU " + std::to_string(d);
    if (const Device* dev = t.find_device(d); dev && !dev->name.empty()) name += " " + dev->name;
    name += " (pid " + std::to_string(host_pid) + ")";
    json.name(true, gpu_pid(d), 0, name, static_cast<int64_t>(index * 100 + 1 + d));
  }
  std::set<std::pair<int32_t, int32_t>> streams;
  std::unordered_map<uint64_t, int32_t> launch_tid;  // correlation -> host tid
  if (reports) {
    for (const DeviceReport& r : *reports) write_analysis(r, gpu_pid(r.device), window, json);
  }
  for (const auto& a : t.api_calls) {
    if (!window.overlaps(a.start_ns, a.end_ns)) continue;
    std::string args;
    if (a.correlation) args = "\"correlation\":" + std::to_string(*a.correlation);
    json.complete(t.strings.view(a.name), a.driver ? "cuda_driver" : "cuda_runtime", host_pid, a.tid, a.start_ns,
                  a.end_ns, args);
    if (a.correlation && a.api_class == ApiClass::kLaunch) {
      json.flow(true, *a.correlation, host_pid, a.tid, a.start_ns);
      launch_tid[*a.correlation] = a.tid;
    }
  }
  for (const auto& e : t.host_events) {
    if (!window.overlaps(e.start_ns, e.end_ns)) continue;
    std::string args;
    if (e.num_args > 0) {
      args = "\"Input Dims\":[";
      for (uint16_t i = 0; i < e.num_args; ++i) {
        const OpArg& a = t.op_args[e.first_arg + i];
        if (i) args += ",";
        args += "[";
        for (uint16_t r = 0; r < a.rank; ++r) {
          if (r) args += ",";
          args += std::to_string(t.dims[a.first_dim + r]);
        }
        args += "]";
      }
      args += "],\"Input type\":[";
      for (uint16_t i = 0; i < e.num_args; ++i) {
        if (i) args += ",";
        append_json_string(args, t.strings.view(t.op_args[e.first_arg + i].dtype));
      }
      args += "]";
    } else if (e.num_matmuls > 0) {
      // No recorded arguments (an interposed cuBLAS call): the products it performed.
      const Matmul& m = t.matmuls_of(e).front();
      args = fmt::format("\"m\":{},\"n\":{},\"k\":{},\"batch\":{},\"dtype\":", m.m, m.n, m.k, m.batch);
      append_json_string(args, precision_name(m.dtype));
    }
    const char* cat = e.kind == HostEventKind::kOp ? "cpu_op" : "user_annotation";
    if (e.end_ns == e.start_ns && e.kind == HostEventKind::kAnnotation)
      json.instant(t.strings.view(e.name), cat, host_pid, e.tid, e.start_ns);
    else
      json.complete(t.strings.view(e.name), cat, host_pid, e.tid, e.start_ns, e.end_ns, args);
  }
  for (const auto& k : t.kernels) {
    if (!window.overlaps(k.start_ns, k.end_ns)) continue;
    streams.insert({k.device, k.stream});
    std::string args = "\"grid\":[" + std::to_string(k.grid.x) + "," + std::to_string(k.grid.y) + "," +
                       std::to_string(k.grid.z) + "],\"block\":[" + std::to_string(k.block.x) + "," +
                       std::to_string(k.block.y) + "," + std::to_string(k.block.z) + "]";
    if (k.registers_per_thread) args += ",\"registers per thread\":" + std::to_string(*k.registers_per_thread);
    if (k.shared_memory_bytes) args += ",\"shared memory\":" + std::to_string(*k.shared_memory_bytes);
    if (k.correlation) args += ",\"correlation\":" + std::to_string(*k.correlation);
    json.complete(t.strings.view(k.name), "kernel", gpu_pid(k.device), k.stream, k.start_ns, k.end_ns, args);
    if (k.correlation && launch_tid.count(*k.correlation))
      json.flow(false, *k.correlation, gpu_pid(k.device), k.stream, k.start_ns);
  }
  for (const auto& m : t.memcpys) {
    if (!window.overlaps(m.start_ns, m.end_ns)) continue;
    streams.insert({m.device, m.stream});
    std::string args;
    if (m.bytes) args = "\"bytes\":" + std::to_string(*m.bytes);
    if (m.host_memory != HostMemory::kUnknown)
      args += std::string(args.empty() ? "" : ",") + "\"host memory\":\"" +
              (m.host_memory == HostMemory::kPinned ? "pinned" : "pageable") + "\"";
    json.complete(copy_kind_name(m.kind), "gpu_memcpy", gpu_pid(m.device), m.stream, m.start_ns, m.end_ns, args);
  }
  for (const auto& m : t.memsets) {
    if (!window.overlaps(m.start_ns, m.end_ns)) continue;
    streams.insert({m.device, m.stream});
    std::string args;
    if (m.bytes) args = "\"bytes\":" + std::to_string(*m.bytes);
    json.complete("Memset", "gpu_memset", gpu_pid(m.device), m.stream, m.start_ns, m.end_ns, args);
  }
  for (const auto& [device, stream] : streams)
    json.name(false, gpu_pid(device), stream, "stream " + std::to_string(stream), stream);
  struct Metric {
    const char* name;
    std::optional<double> DeviceSample::*field;
  };
  static const Metric kMetrics[] = {
      {"nvml util %", &DeviceSample::gpu_util_pct},
      {"SM active %", &DeviceSample::sm_active_pct},
      {"SM occupancy %", &DeviceSample::sm_occupancy_pct},
      {"tensor active %", &DeviceSample::tensor_active_pct},
      {"DRAM bandwidth %", &DeviceSample::dram_bw_pct},
      {"power W", &DeviceSample::power_w},
      {"SM clock MHz", &DeviceSample::sm_clock_mhz},
      {"PCIe TX B/s", &DeviceSample::pcie_tx_bytes_per_s},
      {"PCIe RX B/s", &DeviceSample::pcie_rx_bytes_per_s},
      {"NVLink RX B/s", &DeviceSample::nvlink_rx_bytes_per_s},
      {"NVLink TX B/s", &DeviceSample::nvlink_tx_bytes_per_s},
  };
  for (const auto& s : t.device_samples) {
    if (!window.overlaps(s.time_ns, s.time_ns)) continue;
    for (const auto& m : kMetrics) {
      if ((s.*m.field).has_value()) json.counter(m.name, gpu_pid(s.device), s.time_ns, *(s.*m.field));
    }
    if (s.memory_used_bytes)
      json.counter("memory used GiB", gpu_pid(s.device), s.time_ns,
                   static_cast<double>(*s.memory_used_bytes) / (1u << 30));
  }
}

// An ostream's buffer that gzip-compresses into a file (zlib's gzwrite).
class GzipBuffer : public std::streambuf {
 public:
  explicit GzipBuffer(gzFile file) : file_(file) {}
  bool failed() const { return failed_; }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::streamsize done = 0;
    while (done < n && !failed_) {
      const auto chunk = static_cast<unsigned>(std::min<std::streamsize>(n - done, 1 << 30));
      const int wrote = gzwrite(file_, s + done, chunk);
      if (wrote <= 0)
        failed_ = true;
      else
        done += wrote;
    }
    return done;
  }

 private:
  gzFile file_;
  bool failed_ = false;
};

}  // namespace

void write_perfetto_json(const std::vector<Trace>& traces, std::ostream& out, std::vector<std::string>* warnings,
                         const PerfettoOptions& options) {
  JsonEvents json(out);
  for (size_t i = 0; i < traces.size(); ++i) write_trace(traces[i], i, options, json);
  json.flush();
  if (json.non_finite() > 0 && warnings) {
    warnings->push_back(std::to_string(json.non_finite()) + " counter value" +
                        (json.non_finite() == 1 ? " was" : "s were") + " NaN or infinite (first in \"" +
                        json.first_non_finite() + "\"); written as null");
  }
}

Status write_perfetto_file(const std::vector<Trace>& traces, const std::string& path,
                           const std::vector<std::string>& inputs, std::vector<std::string>* warnings,
                           const PerfettoOptions& options) {
  if (path == "-") {
    write_perfetto_json(traces, std::cout, warnings, options);
    std::cout.flush();
    if (!std::cout) return Status::error("stdout: write failed");
    return ok_status();
  }
  // zlib writes both: gzip, or the bytes as they are ("T", transparent) for a plain name.
  const char* mode = path.ends_with(".gz") ? "wb" : "wT";
  return write_output_file("--perfetto", path, inputs, [&](int fd) -> Status {
    const int own = ::dup(fd);  // gzclose closes the descriptor it was given.
    gzFile file = own < 0 ? nullptr : gzdopen(own, mode);
    if (!file) {
      const int err = errno;
      if (own >= 0) ::close(own);
      return Status::error(std::strerror(err));
    }
    gzbuffer(file, 1 << 20);
    GzipBuffer buffer(file);
    {
      std::ostream out(&buffer);
      write_perfetto_json(traces, out, warnings, options);
      out.flush();
    }
    const int closed = gzclose(file);
    if (buffer.failed() || closed != Z_OK) return Status::error("write failed");
    return ok_status();
  });
}

}  // namespace gpuscope
