#include "input/kineto_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <fmt/core.h>
#include <simdjson.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/aten_matmuls.h"
#include "core/run_protocol.h"
#include "input/event_time.h"
#include "input/input_source.h"
#include "input/trace_merge.h"
#include "input/work_pool.h"

namespace gpuscope {
namespace {

// ---------------------------------------------------------------------------------------
// Bytes come from an InflateStream (plain or gzip, within the inflate limit).

// The inflating thread's blocks, and the most one read asks of the input.
constexpr size_t kReadBlock = 1 << 20;

// With `ahead`, a thread of its own inflates the next blocks while this one parses.
class Input {
 public:
  explicit Input(InflateStream& in, PrefetchStream* ahead = nullptr) : in_(in), ahead_(ahead) {}
  // Reads up to n bytes; 0 at end of input. Sets `error` on a read or decompression error.
  size_t read(char* dst, size_t n, std::string& error) {
    return ahead_ ? ahead_->read(dst, n, error) : in_.read(dst, n, error);
  }
  uint64_t compressed_offset() const { return ahead_ ? ahead_->compressed_offset() : in_.compressed_offset(); }
  // True once the inflate limit was hit: an error, not a truncated trace.
  bool fatal() const { return ahead_ ? ahead_->limit_exceeded() : in_.limit_exceeded(); }
  // These two are final once read has returned 0.
  bool gzip() const { return in_.gzip(); }
  const std::vector<std::string>& notes() const { return in_.notes(); }

 private:
  InflateStream& in_;
  PrefetchStream* ahead_;
};

// ---------------------------------------------------------------------------------------
// Numbers. Chrome trace timestamps are microseconds, often with a fractional part
// ("5154460552087.714"); parsing the text directly keeps nanoseconds exact where a double
// would round at epoch-scale values.

std::optional<int64_t> parse_us_as_ns(std::string_view t) {
  while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t'))
    t.remove_suffix(1);
  if (t.empty()) return std::nullopt;
  // One pass for the exponent and the dot (find_first_of("eE") called memchr on "eE" for
  // every byte, twice per event).
  size_t dot = std::string_view::npos;
  bool exponent = false;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == 'e' || c == 'E')
      exponent = true;
    else if (c == '.' && dot == std::string_view::npos)
      dot = i;
  }
  if (exponent) {
    double v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || !std::isfinite(v) || std::fabs(v) > 9e12 * 1e3) return std::nullopt;
    return static_cast<int64_t>(std::llround(v * 1000.0));
  }
  bool negative = false;
  if (t.front() == '-') {
    negative = true;
    t.remove_prefix(1);
    if (dot != std::string_view::npos) --dot;
  }
  const std::string_view whole = t.substr(0, dot);
  int64_t us = 0;
  if (whole.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), us);
  if (ec != std::errc() || p != whole.data() + whole.size()) return std::nullopt;
  if (us > INT64_MAX / 1000 - 1) return std::nullopt;
  int64_t ns = us * 1000;
  if (dot != std::string_view::npos) {
    const std::string_view frac = t.substr(dot + 1);
    int64_t scale = 100;
    for (size_t i = 0; i < frac.size(); ++i) {
      if (frac[i] < '0' || frac[i] > '9') return std::nullopt;
      if (i < 3) {
        ns += (frac[i] - '0') * scale;
        scale /= 10;
      } else if (i == 3 && frac[i] >= '5') {
        ns += 1;  // Round to the nearest nanosecond.
      }
    }
  }
  return negative ? -ns : ns;
}

// ---------------------------------------------------------------------------------------
// One event as read from JSON, before it becomes a core event.

struct RawEvent {
  std::string_view ph, cat, name;
  std::optional<int64_t> pid_num, tid_num;
  std::string_view pid_str, tid_str;
  std::optional<int64_t> ts_ns, dur_ns;
  std::optional<int64_t> device, stream, correlation, registers, shared_memory, bytes;
  Dim3 grid, block;
  // A communication kernel's collective (PyTorch 2.1+ writes these on NCCL kernels).
  std::string_view collective, dtype;
  std::optional<int64_t> in_nelems, out_nelems, group_size;
  // Shapes: each entry is one argument; rank -1 when not a plain tensor.
  std::vector<std::vector<int64_t>> dims;
  std::vector<int> dims_rank;
  std::vector<std::string_view> types;
  bool has_shapes = false;

  void clear() {
    ph = cat = name = pid_str = tid_str = {};
    pid_num = tid_num = ts_ns = dur_ns = std::nullopt;
    device = stream = correlation = registers = shared_memory = bytes = std::nullopt;
    grid = block = Dim3{};
    collective = dtype = {};
    in_nelems = out_nelems = group_size = std::nullopt;
    dims_rank.clear();
    types.clear();
    has_shapes = false;
  }
};

using simdjson::ondemand::value;

// A field's key as text. Keys without escapes (every key profilers write) are taken as they
// stand in the JSON, which spares simdjson copying each one out; the others are unescaped.
// False on invalid JSON. (Stage 1 has checked that every string is closed.)
template <typename Field>
bool field_key(Field& field, std::string_view& key) {
  simdjson::ondemand::raw_json_string raw;
  if (field.key().get(raw)) return false;
  const char* begin = raw.raw();
  const char* p = begin;
  while (*p != '"' && *p != '\\') ++p;
  if (*p == '"') {
    key = std::string_view(begin, static_cast<size_t>(p - begin));
    return true;
  }
  return !field.unescaped_key().get(key);
}

// On-Demand contract: once an array element or object field is itself an error, the document
// is broken there and iteration must stop (continuing can yield the same error forever).
// Every loop below checks that first. A value of an unexpected *type* is not such an error.

// Each returns false on an unexpected type.
bool get_int(value v, std::optional<int64_t>& out) {
  std::string_view str;
  if (!v.get_string().get(str)) {  // Some producers (ROCm) write numbers as strings: "0x0", "2560".
    int64_t n = 0;
    const bool hex = str.starts_with("0x") || str.starts_with("0X");
    const char* b = str.data() + (hex ? 2 : 0);
    auto [p, ec] = std::from_chars(b, str.data() + str.size(), n, hex ? 16 : 10);
    if (ec != std::errc() || p != str.data() + str.size()) return false;
    out = n;
    return true;
  }
  int64_t i = 0;
  if (!v.get_int64().get(i)) {
    out = i;
    return true;
  }
  double d = 0;
  // Casting a double outside int64's range is undefined behaviour: such values are rejected.
  if (!v.get_double().get(d) && std::isfinite(d) && d > -9.2e18 && d < 9.2e18) {
    out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

// A string arg; anything else leaves `out` empty.
bool get_text(value v, std::string_view& out) {
  if (v.get_string().get(out)) {
    out = {};
    return false;
  }
  return true;
}

bool get_dim3(value v, Dim3& out) {
  simdjson::ondemand::array a;
  if (v.get_array().get(a)) return false;
  uint32_t vals[3] = {0, 0, 0};
  int i = 0;
  for (auto e : a) {
    if (e.error()) return false;
    int64_t x = 0;
    if (e.get_int64().get(x) || x < 0 || x > UINT32_MAX) return false;
    if (i < 3) vals[i] = static_cast<uint32_t>(x);
    ++i;
  }
  out = {vals[0], vals[1], vals[2]};
  return true;
}

bool get_id(value v, std::optional<int64_t>& num, std::string_view& str) {
  simdjson::ondemand::json_type t;
  if (v.type().get(t)) return false;
  if (t == simdjson::ondemand::json_type::string) {
    if (v.get_string().get(str)) return false;
    int64_t n = 0;
    auto [p, ec] = std::from_chars(str.data(), str.data() + str.size(), n);
    if (ec == std::errc() && p == str.data() + str.size()) num = n;
    return true;
  }
  return get_int(v, num);
}

bool get_time(value v, std::optional<int64_t>& out) {
  simdjson::ondemand::json_type t;
  if (v.type().get(t) || t != simdjson::ondemand::json_type::number) return false;
  out = parse_us_as_ns(v.raw_json_token());
  return out.has_value();
}

bool parse_shapes(value v, RawEvent& ev) {
  simdjson::ondemand::array a;
  if (v.get_array().get(a)) return false;
  // A repeated "Input Dims" replaces the earlier one: dims_rank and dims must stay the same
  // length (appending here read past ev.dims, found by kineto_reader_fuzz).
  ev.dims_rank.clear();
  ev.has_shapes = false;
  size_t i = 0;
  for (auto arg : a) {
    if (arg.error()) return false;
    if (ev.dims.size() <= i) ev.dims.emplace_back();
    auto& shape = ev.dims[i];
    shape.clear();
    int rank = 0;
    simdjson::ondemand::array inner;
    if (arg.get_array().get(inner)) {
      rank = -1;  // Not an array: unusual but harmless.
    } else {
      for (auto d : inner) {
        if (d.error()) return false;
        int64_t x = 0;
        simdjson::ondemand::json_type t;
        if (d.type().get(t)) return false;
        if (t != simdjson::ondemand::json_type::number || d.get_int64().get(x)) {
          rank = -1;  // A tensor list ([[..],[..]]): not a single shape.
          break;
        }
        shape.push_back(x);
        ++rank;
      }
    }
    ev.dims_rank.push_back(rank);
    ++i;
  }
  ev.has_shapes = true;
  return true;
}

bool parse_types(value v, RawEvent& ev) {
  simdjson::ondemand::array a;
  if (v.get_array().get(a)) return false;
  ev.types.clear();  // A repeated "Input type" replaces the earlier one.
  for (auto t : a) {
    if (t.error()) return false;
    std::string_view s;
    if (t.get_string().get(s)) s = {};
    ev.types.push_back(s);
  }
  return true;
}

// Args are producer-specific: a field of an unexpected type is ignored (left unknown), never
// a reason to drop the event.
bool parse_args(value v, RawEvent& ev) {
  simdjson::ondemand::object args;
  if (v.get_object().get(args)) return false;
  for (auto field : args) {
    if (field.error()) return false;
    std::string_view key;
    if (!field_key(field, key)) return false;
    value fv;
    if (field.value().get(fv)) return false;
    // A failed read leaves that field unknown (see above).
    if (key == "device")
      get_int(fv, ev.device);
    else if (key == "stream")
      get_int(fv, ev.stream);
    else if (key == "correlation")
      get_int(fv, ev.correlation);
    else if (key == "registers per thread")
      get_int(fv, ev.registers);
    else if (key == "shared memory")
      get_int(fv, ev.shared_memory);
    else if (key == "bytes")
      get_int(fv, ev.bytes);
    else if (key == "grid")
      get_dim3(fv, ev.grid);
    else if (key == "block")
      get_dim3(fv, ev.block);
    else if (key == "Input Dims")
      parse_shapes(fv, ev);
    else if (key == "Input type")
      parse_types(fv, ev);
    else if (key == "Collective name")
      get_text(fv, ev.collective);
    else if (key == "dtype")
      get_text(fv, ev.dtype);
    else if (key == "In msg nelems")
      get_int(fv, ev.in_nelems);
    else if (key == "Out msg nelems")
      get_int(fv, ev.out_nelems);
    else if (key == "Group size")
      get_int(fv, ev.group_size);
  }
  return true;
}

enum class Category { kIgnored, kKernel, kMemcpy, kMemset, kRuntime, kDriver, kOp, kAnnotation, kGpuAnnotation };

Category category_of(std::string_view cat) {
  if (cat == "kernel" || cat == "Kernel") return Category::kKernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return Category::kMemcpy;
  if (cat == "gpu_memset" || cat == "Memset") return Category::kMemset;
  if (cat == "cuda_runtime" || cat == "Runtime") return Category::kRuntime;
  if (cat == "cuda_driver") return Category::kDriver;
  if (cat == "cpu_op" || cat == "Operator") return Category::kOp;
  if (cat == "user_annotation") return Category::kAnnotation;
  if (cat == "gpu_user_annotation") return Category::kGpuAnnotation;
  return Category::kIgnored;
}

// Kineto's activity types of accelerators whose work gpuscope does not analyse: Meta's MTIA
// ("mtia_runtime", "mtia_ccp_events", "mtia_insight"), Intel's XPU and Gaudi HPU, PyTorch's
// PrivateUse1 backends.
bool accelerator_category(std::string_view cat) {
  return cat.starts_with("mtia") || cat.starts_with("xpu") || cat.starts_with("hpu") || cat.starts_with("privateuse1");
}

CopyKind copy_kind(std::string_view name) {
  if (name.find("HtoD") != std::string_view::npos) return CopyKind::kHtoD;
  if (name.find("DtoH") != std::string_view::npos) return CopyKind::kDtoH;
  if (name.find("DtoD") != std::string_view::npos) return CopyKind::kDtoD;
  if (name.find("HtoH") != std::string_view::npos) return CopyKind::kHtoH;
  if (name.find("PtoP") != std::string_view::npos) return CopyKind::kPtoP;
  return CopyKind::kUnknown;
}

// ---------------------------------------------------------------------------------------

// What the events of a stretch of JSON held: counts, and the first event skipped or dropped
// (offsets in the uncompressed JSON). Stretches read apart add up in order.
struct EventTally {
  int64_t events = 0, skipped = 0, bad_times = 0;
  uint64_t first_skip_offset = 0, first_bad_time_offset = 0;
  std::string first_skip_reason, first_bad_time_reason;
  // Events of an accelerator other than a CUDA or ROCm GPU (accelerator_category), and the
  // first one's category.
  int64_t other_accelerator = 0;
  std::string other_accelerator_cat;

  void add(EventTally&& later) {
    if (other_accelerator == 0 && later.other_accelerator > 0) {
      other_accelerator_cat = std::move(later.other_accelerator_cat);
    }
    other_accelerator += later.other_accelerator;
    if (skipped == 0 && later.skipped > 0) {
      first_skip_offset = later.first_skip_offset;
      first_skip_reason = std::move(later.first_skip_reason);
    }
    if (bad_times == 0 && later.bad_times > 0) {
      first_bad_time_offset = later.first_bad_time_offset;
      first_bad_time_reason = std::move(later.first_bad_time_reason);
    }
    events += later.events;
    skipped += later.skipped;
    bad_times += later.bad_times;
  }
};

// Turns one JSON event at a time into core events in `trace`. The reader's own thread uses one
// on its buffer; with several threads, each batch of events gets one writing a Trace of its
// own, with `named_lanes` listing what append_events must renumber (trace_merge.h).
class EventParser {
 public:
  EventParser(Trace& trace, simdjson::ondemand::parser& parser, std::vector<NamedLane>* named_lanes = nullptr)
      : trace_(trace), parser_(parser), named_lanes_(named_lanes) {}

  EventTally& tally() { return tally_; }

  void skip_event(uint64_t at, std::string_view why) {
    if (tally_.skipped++ == 0) {
      tally_.first_skip_offset = at;
      tally_.first_skip_reason = std::string(why);
    }
  }

  // One event: `len` bytes at `data`, readable up to `capacity` bytes (at least len +
  // SIMDJSON_PADDING, as simdjson's padded view requires); `begin` is its offset in the JSON.
  void handle_event(const char* data, size_t len, size_t capacity, uint64_t begin) {
    simdjson::ondemand::document doc;
    if (parser_.iterate(simdjson::padded_string_view(data, len, capacity)).get(doc)) {
      return skip_event(begin, "invalid JSON");
    }
    simdjson::ondemand::object obj;
    if (doc.get_object().get(obj)) return skip_event(begin, "an event that is not an object");
    ev_.clear();
    for (auto field : obj) {
      if (field.error()) return skip_event(begin, "invalid JSON");
      std::string_view key;
      if (!field_key(field, key)) return skip_event(begin, "invalid JSON");
      value v;
      if (field.value().get(v)) return skip_event(begin, "invalid JSON");
      bool ok = true;
      if (key == "ph") {
        ok = !v.get_string().get(ev_.ph);
        // Flows, instants and metadata carry nothing the analyses use: stop parsing early
        // (Kineto writes "ph" first, so most of the event is never looked at).
        if (ok && ev_.ph != "X") {
          ++tally_.events;
          return;
        }
      } else if (key == "cat") {
        ok = !v.get_string().get(ev_.cat);
        if (ok && category_of(ev_.cat) == Category::kIgnored) {
          ++tally_.events;
          if (accelerator_category(ev_.cat) && tally_.other_accelerator++ == 0) {
            tally_.other_accelerator_cat = std::string(ev_.cat);
          }
          return;
        }
      } else if (key == "name")
        ok = !v.get_string().get(ev_.name);
      else if (key == "pid")
        ok = get_id(v, ev_.pid_num, ev_.pid_str);
      else if (key == "tid")
        ok = get_id(v, ev_.tid_num, ev_.tid_str);
      else if (key == "ts")
        ok = get_time(v, ev_.ts_ns);
      else if (key == "dur")
        ok = get_time(v, ev_.dur_ns);
      else if (key == "args")
        ok = parse_args(v, ev_);
      if (!ok) return skip_event(begin, fmt::format("field \"{}\" has an unexpected type", key));
    }
    ++tally_.events;
    if (ev_.ph != "X") return;
    const Category cat = category_of(ev_.cat);
    if (cat == Category::kIgnored) return;
    if (!ev_.ts_ns) return skip_event(begin, "an event without \"ts\"");
    const int64_t dur = ev_.dur_ns.value_or(0);
    if (dur < 0) return skip_event(begin, "an event with negative \"dur\"");
    const std::optional<int64_t> end_ns = checked_event_end(*ev_.ts_ns, dur);
    if (!end_ns) {
      if (tally_.bad_times++ == 0) {
        tally_.first_bad_time_offset = begin;
        tally_.first_bad_time_reason = fmt::format("ts {} ns, dur {} ns", *ev_.ts_ns, dur);
      }
      return;
    }
    add_event(cat, *ev_.ts_ns, *end_ns);
  }

  // `named` is set when the lane is a string, stored as -1 - its string id.
  int32_t id_of(const std::optional<int64_t>& num, std::string_view str, bool& named) {
    if (num) return static_cast<int32_t>(*num);
    if (str.empty()) return 0;
    named = true;
    return -1 - static_cast<int32_t>(trace_.strings.intern(str));  // Named lanes: negative ids.
  }
  int32_t id_of(const std::optional<int64_t>& num, std::string_view str) {
    bool named = false;
    return id_of(num, str, named);
  }
  // In a batch read apart, which lane fields of the event just added hold string ids.
  void note_named_lanes(NamedLane::Events events, size_t size, bool first, bool second) {
    if (named_lanes_ && (first || second)) {
      named_lanes_->push_back(
          {events, static_cast<uint8_t>((first ? 1 : 0) | (second ? 2 : 0)), static_cast<uint32_t>(size - 1)});
    }
  }

  // The collective of an NCCL kernel with a numbered device (a named lane is never one).
  void add_collective(const Kernel& k) {
    CollectiveArgs c;
    c.start_ns = k.start_ns;
    c.end_ns = k.end_ns;
    c.device = k.device;
    c.name = trace_.strings.intern(ev_.collective);
    if (!ev_.dtype.empty()) c.dtype = trace_.strings.intern(ev_.dtype);
    c.in_nelems = ev_.in_nelems;
    c.out_nelems = ev_.out_nelems;
    c.group_size = ev_.group_size;
    trace_.collectives.push_back(c);
  }

  void add_event(Category cat, int64_t start, int64_t end) {
    const StringId name = trace_.strings.intern(ev_.name);
    auto corr = [&]() -> std::optional<uint64_t> {
      if (!ev_.correlation || *ev_.correlation < 0) return std::nullopt;
      return static_cast<uint64_t>(*ev_.correlation);
    };
    bool named_gpu = false, named_stream = false, named_pid = false, named_tid = false;
    const int32_t gpu = ev_.device ? static_cast<int32_t>(*ev_.device) : id_of(ev_.pid_num, ev_.pid_str, named_gpu);
    const int32_t stream =
        ev_.stream ? static_cast<int32_t>(*ev_.stream) : id_of(ev_.tid_num, ev_.tid_str, named_stream);
    using Events = NamedLane::Events;
    switch (cat) {
      case Category::kKernel: {
        Kernel k;
        k.start_ns = start;
        k.end_ns = end;
        k.device = gpu;
        k.stream = stream;
        k.name = name;
        k.grid = ev_.grid;
        k.block = ev_.block;
        if (ev_.registers) k.registers_per_thread = static_cast<int32_t>(*ev_.registers);
        if (ev_.shared_memory) k.shared_memory_bytes = static_cast<int32_t>(*ev_.shared_memory);
        k.correlation = corr();
        trace_.kernels.push_back(k);
        note_named_lanes(Events::kKernels, trace_.kernels.size(), named_gpu, named_stream);
        if (!ev_.collective.empty() && ev_.device) add_collective(k);
        break;
      }
      case Category::kMemcpy: {
        Memcpy m;
        m.start_ns = start;
        m.end_ns = end;
        m.device = gpu;
        m.stream = stream;
        m.kind = copy_kind(ev_.name);
        m.host_memory = ev_.name.find("Pageable") != std::string_view::npos ? HostMemory::kPageable
                        : ev_.name.find("Pinned") != std::string_view::npos ? HostMemory::kPinned
                                                                            : HostMemory::kUnknown;
        if (ev_.bytes && *ev_.bytes >= 0) m.bytes = static_cast<uint64_t>(*ev_.bytes);
        m.correlation = corr();
        trace_.memcpys.push_back(m);
        note_named_lanes(Events::kMemcpys, trace_.memcpys.size(), named_gpu, named_stream);
        break;
      }
      case Category::kMemset: {
        Memset m;
        m.start_ns = start;
        m.end_ns = end;
        m.device = gpu;
        m.stream = stream;
        if (ev_.bytes && *ev_.bytes >= 0) m.bytes = static_cast<uint64_t>(*ev_.bytes);
        m.correlation = corr();
        trace_.memsets.push_back(m);
        note_named_lanes(Events::kMemsets, trace_.memsets.size(), named_gpu, named_stream);
        break;
      }
      case Category::kRuntime:
      case Category::kDriver: {
        ApiCall c;
        c.start_ns = start;
        c.end_ns = end;
        c.pid = id_of(ev_.pid_num, ev_.pid_str, named_pid);
        c.tid = id_of(ev_.tid_num, ev_.tid_str, named_tid);
        c.name = name;
        c.api_class = classify_api(ev_.name);
        c.driver = cat == Category::kDriver;
        c.correlation = corr();
        trace_.api_calls.push_back(c);
        note_named_lanes(Events::kApiCalls, trace_.api_calls.size(), named_pid, named_tid);
        break;
      }
      case Category::kOp:
      case Category::kAnnotation: {
        HostEvent e;
        e.start_ns = start;
        e.end_ns = end;
        e.pid = id_of(ev_.pid_num, ev_.pid_str, named_pid);
        e.tid = id_of(ev_.tid_num, ev_.tid_str, named_tid);
        e.name = name;
        e.kind = cat == Category::kOp ? HostEventKind::kOp : HostEventKind::kAnnotation;
        // PyTorch 1.9 and earlier write the profiler's step marker with cat "Operator", like the
        // ops: it is the step range (an annotation), whatever category it comes under.
        if (ev_.name.starts_with("ProfilerStep#")) e.kind = HostEventKind::kAnnotation;
        if (ev_.has_shapes) {
          e.first_arg = static_cast<uint32_t>(trace_.op_args.size());
          const size_t n = std::min<size_t>(ev_.dims_rank.size(), UINT16_MAX);
          for (size_t i = 0; i < n; ++i) {
            OpArg a;
            a.first_dim = static_cast<uint32_t>(trace_.dims.size());
            if (ev_.dims_rank[i] > 0) {
              a.rank = static_cast<uint16_t>(ev_.dims_rank[i]);
              trace_.dims.insert(trace_.dims.end(), ev_.dims[i].begin(), ev_.dims[i].end());
            }
            if (i < ev_.types.size() && !ev_.types[i].empty()) a.dtype = trace_.strings.intern(ev_.types[i]);
            trace_.op_args.push_back(a);
          }
          e.num_args = static_cast<uint16_t>(n);
          add_aten_matmuls(trace_, e);
        }
        trace_.host_events.push_back(e);
        note_named_lanes(Events::kHostEvents, trace_.host_events.size(), named_pid, named_tid);
        break;
      }
      case Category::kGpuAnnotation: {
        trace_.gpu_annotations.push_back({start, end, gpu, name});
        note_named_lanes(Events::kGpuAnnotations, trace_.gpu_annotations.size(), named_gpu, false);
        break;
      }
      case Category::kIgnored:
        break;
    }
  }

 private:
  Trace& trace_;
  simdjson::ondemand::parser& parser_;
  std::vector<NamedLane>* named_lanes_;
  RawEvent ev_;
  EventTally tally_;
};

// A run of consecutive events copied out of the reader's buffer, parsed by a worker.
struct EventBatch {
  std::string bytes;                                  // The events' JSON text, with SIMDJSON_PADDING bytes after it.
  uint64_t offset = 0;                                // Of bytes[0] in the uncompressed JSON.
  std::vector<std::pair<uint32_t, uint32_t>> events;  // [begin, end) in bytes.
};

struct ParsedBatch {
  Trace trace;
  std::vector<NamedLane> named_lanes;
  EventTally tally;
};

ParsedBatch parse_batch(const EventBatch& batch) {
  thread_local simdjson::ondemand::parser parser;
  ParsedBatch out;
  EventParser events(out.trace, parser, &out.named_lanes);
  const size_t capacity = batch.bytes.size();
  for (const auto& [begin, end] : batch.events) {
    events.handle_event(batch.bytes.data() + begin, end - begin, capacity - begin, batch.offset + begin);
  }
  out.tally = std::move(events.tally());
  return out;
}

// The reader's buffer, allocated without being zero-filled: std::string::resize wrote all of
// its 4 MiB before the first byte was read (4 ms, most of it page faults, before the parsing
// threads had work). Its last SIMDJSON_PADDING bytes are spaces.
class ReadBuffer {
 public:
  // A buffer of `size` bytes holding the first `keep` bytes of the current one.
  void reallocate(size_t size, size_t keep = 0) {
    std::unique_ptr<char[]> next(new char[size]);
    if (keep > 0) std::memcpy(next.get(), data_.get(), keep);
    std::memset(next.get() + size - simdjson::SIMDJSON_PADDING, ' ', simdjson::SIMDJSON_PADDING);
    data_ = std::move(next);
    size_ = size;
  }
  char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  char operator[](size_t i) const { return data_[i]; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

class KinetoReader {
 public:
  // `size_hint`: the most bytes the JSON can have when known (plain input), so that small
  // inputs (tests, fuzzing) do not allocate the full initial buffer.
  // `pool`: worker threads that parse batches of events (null: this thread parses each event
  // as it is found).
  KinetoReader(Input& in, std::string source, const KinetoReadOptions& options,
               std::optional<uint64_t> size_hint = std::nullopt, WorkPool* pool = nullptr)
      : in_(in), options_(options), pool_(pool) {
    trace_.source = std::move(source);
    const size_t initial =
        size_hint ? static_cast<size_t>(std::clamp<uint64_t>(*size_hint + 1, 4096, kInitialBuffer)) : kInitialBuffer;
    buf_.reallocate(initial + simdjson::SIMDJSON_PADDING);
  }

  StatusOr<Trace> run() {
    if (!fill()) return fail_io_or("the file is empty: expected a PyTorch profiler trace (JSON)");
    skip_ws();
    if (!available() && !fill_ws())
      return fail_io_or("the file holds only whitespace: expected a PyTorch profiler trace");
    const char c = buf_[pos_];
    if (c == '[') {
      saw_events_ = true;
      RETURN_IF_ERROR(stream_events());
    } else if (c == '{') {
      ++pos_;
      RETURN_IF_ERROR(read_object());
    } else {
      return error_at(pos_, fmt::format("not JSON (found '{}' where a trace object starts); expected a "
                                        "PyTorch profiler trace",
                                        printable(c)));
    }
    if (!saw_events_) {
      return Status::error(
          "no \"traceEvents\" array: this JSON is not a PyTorch profiler (Chrome trace) file; export one with "
          "torch.profiler's export_chrome_trace() or on_trace_ready=tensorboard_trace_handler");
    }
    if (!trace_.truncated) RETURN_IF_ERROR(finish_input());
    take_parsed_batches(0);
    const EventTally& t = events_.tally();
    if (t.skipped > 0) {
      trace_.warnings.push_back(
          fmt::format("skipped {} event{} with unexpected field types or invalid JSON (first at byte {}: {})",
                      t.skipped, t.skipped == 1 ? "" : "s", t.first_skip_offset, t.first_skip_reason));
    }
    if (t.bad_times > 0) {
      trace_.warnings.push_back(
          fmt::format("dropped {} event{} whose times are out of range (first at byte {}: {}); times must lie within "
                      "+-3e18 ns and durations under 1e15 ns (11.6 days)",
                      t.bad_times, t.bad_times == 1 ? "" : "s", t.first_bad_time_offset, t.first_bad_time_reason));
    }
    if (t.other_accelerator > 0) {
      trace_.other_accelerator = fmt::format("{} {} events", t.other_accelerator, t.other_accelerator_cat);
    }
    describe_unlisted_devices();
    trace_.sort_events();
    return std::move(trace_);
  }

 private:
  static constexpr size_t kInitialBuffer = 4 << 20;
  // One JSON value (an event, a metadata object, a string) is held whole in the buffer: a
  // larger one is not a profiler trace (a 3 GB string once took 4 GB before failing; a 250 MB
  // kernel name in a 243 KB gzip, 1.8 GB: the value is copied several times on its way to the
  // trace). Profiler events take bytes to kilobytes, their metadata kilobytes.
  static constexpr uint64_t kMaxValueBytes = 16ull << 20;

  // deviceProperties numbers the devices the process sees; kernels may carry another index (the
  // physical one, under CUDA_VISIBLE_DEVICES): kernels on device 2 with properties for 0 only.
  // Where every described device is one model, that description is the GPU's whatever its
  // index, so each unlisted device that ran work gets a copy with its own id; where the models
  // differ, which one ran the work is unknown and the device stays undescribed.
  void describe_unlisted_devices() {
    if (trace_.devices.empty()) return;
    for (const Device& d : trace_.devices) {
      if (d.name != trace_.devices.front().name) return;
    }
    std::set<int32_t> unlisted;
    const auto note = [&](int32_t id) {
      if (!trace_.find_device(id)) unlisted.insert(id);
    };
    for (const Kernel& k : trace_.kernels) note(k.device);
    for (const Memcpy& m : trace_.memcpys) note(m.device);
    for (const Memset& m : trace_.memsets) note(m.device);
    const Device model = trace_.devices.front();
    for (int32_t id : unlisted) {
      Device d = model;
      d.id = id;
      trace_.devices.push_back(std::move(d));
    }
  }

  size_t available() const { return end_ - pos_; }
  uint64_t offset(size_t pos) const { return base_ + pos; }

  static std::string printable(char c) {
    if (c >= 32 && c < 127) return std::string(1, c);
    return fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  }

  Status error_at(size_t pos, std::string what) { return Status::error(fmt::format("byte {}: {}", offset(pos), what)); }

  Status fail_io_or(std::string what) {
    if (!fatal_.empty()) return Status::error(fatal_);
    if (in_.fatal()) return Status::error(io_error_);
    if (!io_error_.empty())
      return Status::error(fmt::format("cannot read: {} (is the file a complete gzip?)", io_error_));
    return Status::error(std::move(what));
  }

  // Moves unread bytes to the front, grows the buffer if it is full, reads more. Returns
  // false when nothing more could be read.
  bool fill() {
    if (eof_) return false;
    submit_batch();  // Its events' bytes are about to move.
    if (pos_ > 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      base_ += pos_;
      end_ -= pos_;
      pos_ = 0;
    }
    const size_t capacity = buf_.size() - simdjson::SIMDJSON_PADDING;
    if (end_ == capacity) {
      const uint64_t max_value = options_.limits.max_inflate_bytes.value_or(kMaxValueBytes);
      if (capacity >= max_value) {
        fatal_ = fmt::format(
            "byte {}: a single JSON value (event, string or metadata) takes more than {}, which no "
            "profiler trace holds; if the file is genuine, raise the limit with --max-inflate SIZE or "
            "{}=SIZE",
            base_, format_bytes(max_value), run_protocol::kEnvMaxInflate.name);
        eof_ = true;
        return false;
      }
      buf_.reallocate(std::min<uint64_t>(capacity * 2, max_value) + simdjson::SIMDJSON_PADDING, end_);
    }
    // Reads end where the inflating thread's blocks end (kReadBlock), so that a gzip error
    // cuts the JSON at the same byte with or without that thread: the read that fails returns
    // nothing, and it must be the same read both ways (found by kineto_reader_fuzz).
    const uint64_t read_so_far = base_ + end_;
    const size_t room =
        std::min<uint64_t>(buf_.size() - simdjson::SIMDJSON_PADDING - end_, kReadBlock - read_so_far % kReadBlock);
    const size_t got = in_.read(buf_.data() + end_, room, io_error_);
    if (got == 0) {
      eof_ = true;
      return false;
    }
    end_ += got;
    if (options_.progress) options_.progress(base_ + end_, in_.compressed_offset());
    if (options_.events_read && !pool_) options_.events_read->store(events_.tally().events, std::memory_order_relaxed);
    return true;
  }

  void skip_ws() {
    while (pos_ < end_) {
      const char c = buf_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      ++pos_;
    }
  }
  // Skips whitespace across refills; false at end of input.
  bool fill_ws() {
    for (;;) {
      skip_ws();
      if (available()) return true;
      if (!fill()) return false;
    }
  }

  // Finds the end of the JSON value starting at pos_ (exclusive), refilling as needed.
  // Returns npos at end of input (truncated value).
  size_t scan_value() {
    for (;;) {
      const size_t end = scan_from(pos_);
      if (end != std::string::npos) return end;
      if (!fill()) return std::string::npos;
    }
  }

  // Bracket- and string-aware scan over buf_[p, end_). npos if the value is incomplete.
  // Sixteen bytes at a time: only the quotes and brackets in them are looked at (the bytes
  // read past end_ lie in the padding and are masked off).
  size_t scan_from(size_t p) const {
    const char* b = buf_.data();
    const char first = b[p];
    if (first == '"') return skip_string(p + 1);
    if (first != '{' && first != '[') {
      while (p < end_) {
        const char c = b[p];
        if (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t') return p;
        ++p;
      }
      return eof_ ? p : std::string::npos;
    }
    // One pass over the quotes, backslashes and brackets, in or out of strings.
    int depth = 0;
    bool in_string = false, escaped = false;  // `escaped`: the next block's first byte.
    for (; p < end_; p += kBlock) {
      uint32_t mask = bytes_in_block(b + p, p, '"', '{', '}') | bytes_in_block(b + p, p, '\\', '\\', '\\');
      if (escaped) mask &= ~1u;
      escaped = false;
      while (mask != 0) {
        const uint32_t bit = static_cast<uint32_t>(__builtin_ctz(mask));
        mask &= mask - 1;
        const char c = b[p + bit];
        if (in_string) {
          if (c == '"') {
            in_string = false;
          } else if (c == '\\') {  // The next byte is escaped, whatever it is.
            if (bit + 1 < kBlock)
              mask &= ~(1u << (bit + 1));
            else
              escaped = true;
          }
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (c != '\\' && --depth == 0) {
          return p + bit + 1;
        }
      }
    }
    return std::string::npos;
  }

  // p is just after an opening quote; returns the index after the closing quote, or npos.
  size_t skip_string(size_t p) const {
    const char* b = buf_.data();
    while (p < end_) {
      const uint32_t mask = bytes_in_block(b + p, p, '"', '\\', '\\');
      if (mask == 0) {
        p += kBlock;
        continue;
      }
      const size_t at = p + static_cast<size_t>(__builtin_ctz(mask));
      if (b[at] == '"') return at + 1;
      p = at + 2;  // A backslash escapes the next byte.
    }
    return std::string::npos;
  }

  static constexpr size_t kBlock = 16;

  // Bit i set where block[i] is `a`, or `b` or `c` (for b == '{' and c == '}': either bracket
  // too), for the bytes before end_ (`at` is the block's index in buf_).
  uint32_t bytes_in_block(const char* block, size_t at, char a, char b, char c) const {
#if defined(__SSE2__)
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
    __m128i m = _mm_cmpeq_epi8(v, _mm_set1_epi8(a));
    // '[' and ']' are '{' and '}' without bit 5 (0x5B/0x7B, 0x5D/0x7D).
    const __m128i w = b == '{' ? _mm_or_si128(v, _mm_set1_epi8(0x20)) : v;
    m = _mm_or_si128(m, _mm_cmpeq_epi8(w, _mm_set1_epi8(b)));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(w, _mm_set1_epi8(c)));
    uint32_t mask = static_cast<uint32_t>(_mm_movemask_epi8(m));
#else
    uint32_t mask = 0;
    for (size_t i = 0; i < kBlock; ++i) {
      char x = block[i];
      if (b == '{' && (x == '[' || x == ']')) x = static_cast<char>(x | 0x20);
      if (x == a || x == b || x == c) mask |= 1u << i;
    }
#endif
    if (end_ - at < kBlock) mask &= (1u << (end_ - at)) - 1;
    return mask;
  }

  Status truncated(std::string_view where) {
    if (!fatal_.empty()) return Status::error(fatal_);
    take_parsed_batches(0);
    const int64_t events = events_.tally().events;
    if (in_.fatal()) return Status::error(io_error_);
    if (!io_error_.empty()) {
      trace_.warnings.push_back(
          fmt::format("the file could not be read to its end ({}) after {} bytes of JSON: "
                      "analysed the {} events before that point",
                      io_error_, offset(end_), events));
    } else {
      trace_.warnings.push_back(
          fmt::format("the JSON ends early ({}) at byte {}: the file looks truncated; "
                      "analysed the {} events before that point",
                      where, offset(end_), events));
    }
    trace_.truncated = true;
    return ok_status();
  }

  // After the JSON: reads the input to its end, so that a gzip without its trailer, bytes after
  // the last gzip member and text after the JSON are noticed (and said) rather than ignored.
  Status finish_input() {
    uint64_t extra = 0, extra_at = 0;
    for (;;) {
      skip_ws();
      if (available()) {
        if (extra == 0) extra_at = offset(pos_);
        extra += available();
        pos_ = end_;
      }
      if (!fill()) break;
    }
    if (!fatal_.empty()) return Status::error(fatal_);
    if (in_.fatal()) return Status::error(io_error_);
    if (extra > 0) {
      trace_.warnings.push_back(fmt::format(
          "ignored {} bytes after the end of the JSON (byte {}): trailing garbage, or two traces in one file?", extra,
          extra_at));
    }
    if (!io_error_.empty()) {
      trace_.warnings.push_back(
          in_.gzip() && io_error_ == "unexpected end of the gzip stream"
              ? "the gzip stream ends without its trailer (CRC and length unchecked): the JSON is complete, but the "
                "file was cut short or never closed"
              : fmt::format("after the JSON: {}", io_error_));
    }
    for (const auto& note : in_.notes()) trace_.warnings.push_back(note);
    return ok_status();
  }

  Status read_object() {
    for (;;) {
      if (!fill_ws()) return truncated("inside the top-level object");
      const char c = buf_[pos_];
      if (c == '}') {
        ++pos_;
        return ok_status();
      }
      if (c == ',') {
        ++pos_;
        continue;
      }
      if (c != '"') return error_at(pos_, fmt::format("invalid JSON: expected a key, found '{}'", printable(c)));
      const size_t key_end = scan_value();
      if (key_end == std::string::npos) return truncated("inside a key");
      const std::string key(buf_.data() + pos_ + 1, key_end - pos_ - 2);
      pos_ = key_end;
      if (!fill_ws()) return truncated("after a key");
      if (buf_[pos_] != ':') return error_at(pos_, "invalid JSON: expected ':' after a key");
      ++pos_;
      if (!fill_ws()) return truncated("after a key");
      if (key == "traceEvents") {
        if (buf_[pos_] != '[') return error_at(pos_, "\"traceEvents\" is not an array");
        saw_events_ = true;
        RETURN_IF_ERROR(stream_events());
        if (trace_.truncated) return ok_status();
        continue;
      }
      const size_t value_end = scan_value();
      if (value_end == std::string::npos) return truncated(fmt::format("inside \"{}\"", key));
      if (value_end == pos_) {
        return error_at(pos_, fmt::format("invalid JSON: unexpected '{}' after \"{}\":", printable(buf_[pos_]), key));
      }
      if (key == "deviceProperties" || key == "distributedInfo") {
        RETURN_IF_ERROR(read_metadata(key, pos_, value_end));
      }
      pos_ = value_end;
    }
  }

  Status read_metadata(const std::string& key, size_t begin, size_t end) {
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (auto err = parser.parse(buf_.data() + begin, end - begin, true).get(root)) {
      return error_at(begin, fmt::format("invalid JSON in \"{}\": {}", key, simdjson::error_message(err)));
    }
    if (key == "distributedInfo") {
      int64_t v = 0;
      if (!root["rank"].get_int64().get(v)) trace_.rank = static_cast<int32_t>(v);
      if (!root["world_size"].get_int64().get(v)) trace_.world_size = static_cast<int32_t>(v);
      return ok_status();
    }
    simdjson::dom::array devices;
    if (root.get_array().get(devices)) return error_at(begin, "\"deviceProperties\" is not an array");
    for (simdjson::dom::element d : devices) {
      Device dev;
      int64_t v = 0;
      std::string_view s;
      if (!d["id"].get_int64().get(v)) dev.id = static_cast<int32_t>(v);
      if (!d["name"].get_string().get(s)) dev.name = std::string(s);
      if (!d["numSms"].get_int64().get(v) && v > 0) dev.num_sms = static_cast<int32_t>(v);
      if (!d["computeMajor"].get_int64().get(v)) dev.cc_major = static_cast<int32_t>(v);
      if (!d["computeMinor"].get_int64().get(v)) dev.cc_minor = static_cast<int32_t>(v);
      if (!d["totalGlobalMem"].get_int64().get(v) && v > 0) dev.memory_bytes = static_cast<uint64_t>(v);
      if (!d["maxThreadsPerMultiprocessor"].get_int64().get(v)) dev.max_threads_per_sm = static_cast<int32_t>(v);
      if (!d["regsPerMultiprocessor"].get_int64().get(v)) dev.regs_per_sm = static_cast<int32_t>(v);
      if (!d["sharedMemPerMultiprocessor"].get_int64().get(v)) dev.shared_mem_per_sm_bytes = static_cast<int32_t>(v);
      if (dev.name.empty()) dev.name = fmt::format("GPU {}", dev.id);
      trace_.devices.push_back(std::move(dev));
    }
    return ok_status();
  }

  Status stream_events() {
    ++pos_;  // '['
    for (;;) {
      if (!fill_ws()) return truncated("inside \"traceEvents\"");
      const char c = buf_[pos_];
      if (c == ']') {
        ++pos_;
        return ok_status();
      }
      if (c == ',') {
        ++pos_;
        continue;
      }
      const size_t end = scan_value();
      if (end == std::string::npos) return truncated("inside an event of \"traceEvents\"");
      if (end == pos_) {
        return error_at(pos_, fmt::format("invalid JSON: unexpected '{}' in \"traceEvents\"", printable(c)));
      }
      if (pool_) {
        add_to_batch(pos_, end);
      } else {
        events_.handle_event(buf_.data() + pos_, end - pos_, buf_.size() - pos_, offset(pos_));
      }
      pos_ = end;
    }
  }

  // Parallel reading: events found in the buffer are gathered into batches of about
  // options_.batch_bytes (1 MiB), each parsed by a worker into a Trace of its own; the batches
  // are appended in order, so the trace equals the one-thread reader's.
  static constexpr size_t kBatchBytes = 1 << 20;

  void add_to_batch(size_t begin, size_t end) {
    if (batch_.events.empty()) batch_begin_ = begin;
    batch_.events.emplace_back(static_cast<uint32_t>(begin - batch_begin_), static_cast<uint32_t>(end - batch_begin_));
    batch_end_ = end;
    if (end - batch_begin_ >= (options_.batch_bytes ? options_.batch_bytes : kBatchBytes)) submit_batch();
  }

  void submit_batch() {
    if (batch_.events.empty()) return;
    const size_t len = batch_end_ - batch_begin_;
    batch_.bytes.reserve(len + simdjson::SIMDJSON_PADDING);
    batch_.bytes.assign(buf_.data() + batch_begin_, len);
    batch_.bytes.append(simdjson::SIMDJSON_PADDING, ' ');
    batch_.offset = offset(batch_begin_);
    // At most two batches per worker wait or run: memory stays a few MiB per thread.
    take_parsed_batches(2 * pool_->threads());
    parsed_.push_back(pool_->submit([batch = std::move(batch_)] { return parse_batch(batch); }));
    batch_ = EventBatch{};
  }

  // Appends parsed batches in order until at most `in_flight` are left.
  void take_parsed_batches(size_t in_flight) {
    if (in_flight == 0) submit_batch();
    while (parsed_.size() > in_flight) {
      ParsedBatch b = parsed_.front().get();
      parsed_.pop_front();
      append_events(trace_, b.trace, b.named_lanes);
      events_.tally().add(std::move(b.tally));
      if (options_.events_read) options_.events_read->store(events_.tally().events, std::memory_order_relaxed);
    }
  }

  Input& in_;
  const KinetoReadOptions& options_;
  Trace trace_;
  ReadBuffer buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t base_ = 0;  // Offset of buf_[0] in the uncompressed stream.
  bool eof_ = false, saw_events_ = false;
  std::string io_error_;
  simdjson::ondemand::parser parser_;
  EventParser events_{trace_, parser_};  // Parses on this thread, and adds up the batches' tallies.
  WorkPool* pool_ = nullptr;
  EventBatch batch_;  // Events found but not yet handed to a worker.
  size_t batch_begin_ = 0, batch_end_ = 0;
  std::deque<std::future<ParsedBatch>> parsed_;
  std::string fatal_;  // An input over a limit: the error returned, whatever the JSON state.
};

unsigned reader_threads(const KinetoReadOptions& options) {
  if (options.threads > 0) return options.threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

StatusOr<unsigned> threads_from_environment() {
  const char* v = std::getenv(run_protocol::kEnvThreads.name);
  if (!v || !*v) return 0u;
  unsigned n = 0;
  auto [p, ec] = std::from_chars(v, v + std::strlen(v), n);
  if (ec != std::errc() || *p != '\0' || n == 0 || n > 4096) {
    return Status::error(
        fmt::format("{}={}: expected a number of threads from 1 to 4096", run_protocol::kEnvThreads.name, v));
  }
  return n;
}

StatusOr<Trace> read_kineto_source(ByteSource& source, const std::string& name, const KinetoReadOptions& options) {
  InflateStream stream(source, InflateProfile::kJson, options.limits);
  const std::string_view head = source.head();
  const bool gzip = head.size() >= 2 && head[0] == '\x1f' && head[1] == '\x8b';
  // By default small inputs (under 8 MiB, or 1 MiB of gzip) are read by this thread alone:
  // threads would cost more than they save. Otherwise one thread inflates (gzip) and
  // `threads - 1` parse.
  const unsigned threads = reader_threads(options);
  const bool small = options.threads == 0 && source.size() && *source.size() < (gzip ? 1u << 20 : 8u << 20);
  if (threads < 2 || small) {
    Input in(stream);
    KinetoReader reader(in, name, options, gzip ? std::nullopt : source.size());
    return reader.run();
  }
  // Blocks of 1 MiB: each is copied out while still in cache, and the few blocks in flight
  // touch little fresh memory (4 MiB blocks cost about 3000 more page faults).
  std::optional<PrefetchStream> ahead;
  if (gzip) ahead.emplace(stream, kReadBlock, 2);
  Input in(stream, ahead ? &*ahead : nullptr);
  WorkPool pool(std::max(1u, threads - 1));
  KinetoReader reader(in, name, options, gzip ? std::nullopt : source.size(), &pool);
  return reader.run();
}

StatusOr<Trace> read_kineto_file(const std::string& path, const KinetoReadOptions& options) {
  auto source = ByteSource::open(path, options.limits);
  if (!source.ok()) return source.status();
  return read_kineto_source(*source.value(), path, options);
}

StatusOr<Trace> read_kineto_buffer(std::string_view json, const std::string& source) {
  return read_kineto_buffer(json, source, KinetoReadOptions{});
}

StatusOr<Trace> read_kineto_buffer(std::string_view json, const std::string& source, const KinetoReadOptions& options) {
  auto bytes = ByteSource::memory(json);
  return read_kineto_source(*bytes, source, options);
}

}  // namespace gpuscope
