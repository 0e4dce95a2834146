#include "input/capture_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <type_traits>
#include <unordered_map>

#include <cxxabi.h>
#include <zlib.h>

#include "capture/capture_format.h"
#include "input/event_time.h"
#include "input/input_source.h"

namespace gpuscope {

using capture::ByteReader;
using capture::RecordType;

namespace {

// The precision of a cudaDataType_t value (library_types.h).
Precision precision_of(int32_t cuda_type) {
  switch (cuda_type) {
    case 0:
      return Precision::kFp32;  // CUDA_R_32F
    case 1:
      return Precision::kFp64;  // CUDA_R_64F
    case 2:
      return Precision::kFp16;  // CUDA_R_16F
    case 14:
      return Precision::kBf16;  // CUDA_R_16BF
    case 3:
    case 8:
      return Precision::kInt8;  // CUDA_R_8I, CUDA_R_8U
    case 28:
    case 29:
      return Precision::kFp8;  // CUDA_R_8F_E4M3, CUDA_R_8F_E5M2
    default:
      return Precision::kUnknown;
  }
}

std::string offset_text(size_t offset) {
  std::ostringstream os;
  os << offset;
  return os.str();
}

// A sliding window over a ByteSource, so a capture is read in pieces: memory holds at most one
// chunk (64 MiB stored) plus a read-ahead, whatever the file's size (a 2 GB sparse file
// once was read whole).
class Window {
 public:
  explicit Window(ByteSource& source) : source_(source) {}

  // Makes at least n bytes available from the current position when the input has them;
  // returns how many are available (fewer only at the end of the input).
  size_t want(size_t n) {
    if (end_ - pos_ >= n || eof_) return end_ - pos_;
    if (pos_ > 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      base_ += pos_;
      end_ -= pos_;
      pos_ = 0;
    }
    // Read-ahead: 4 MiB, or the whole input when it is known to be smaller.
    size_t ahead = kReadAhead;
    if (const auto size = source_.size(); size && *size - std::min(*size, base_) < ahead) {
      ahead = static_cast<size_t>(*size - std::min(*size, base_)) + 1;
    }
    if (buf_.size() < std::max(n, ahead)) buf_.resize(std::max(n, ahead));
    while (end_ < n || (end_ < ahead && !eof_)) {
      const size_t got = source_.read(buf_.data() + end_, buf_.size() - end_, error_);
      if (got == 0) {
        eof_ = true;
        break;
      }
      end_ += got;
      if (end_ >= n) break;  // Enough: do not wait on a slow pipe for the read-ahead.
    }
    return end_ - pos_;
  }
  const char* data() const { return buf_.data() + pos_; }
  // Moves the position n bytes on, reading past what is buffered if needed.
  void skip(uint64_t n) {
    while (n > 0) {
      const size_t have = want(1);
      if (have == 0) return;
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, have));
      pos_ += k;
      n -= k;
    }
  }
  uint64_t offset() const { return base_ + pos_; }
  const std::string& error() const { return error_; }

 private:
  static constexpr size_t kReadAhead = 4 << 20;
  ByteSource& source_;
  std::string buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t base_ = 0;
  bool eof_ = false;
  std::string error_;
};

// Decodes one record's body from its table (visit_fields in capture_format.h), the inverse of
// capture::encode_fields. After a malformed body the ByteReader is not ok(); an interval that
// breaks event_time.h's contract leaves times_ok false.
class FieldReader {
 public:
  explicit FieldReader(ByteReader& in) : in_(in) {}
  bool times_ok() const { return times_ok_; }

  template <typename T>
  void field(capture::Encoding e, T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      v = std::string(in_.str());
    } else if constexpr (std::is_same_v<T, capture::U32x3>) {
      for (uint32_t& x : v) x = static_cast<uint32_t>(in_.varint());
    } else if constexpr (std::is_same_v<T, double>) {
      v = in_.f64();
    } else if constexpr (std::is_same_v<T, bool>) {
      v = in_.u8() != 0;
    } else if (e == capture::Encoding::kByte) {
      v = static_cast<T>(in_.u8());
    } else if (e == capture::Encoding::kUnsigned) {
      v = static_cast<T>(in_.varint());
    } else if (e == capture::Encoding::kEnd) {
      const std::optional<int64_t> end = checked_event_end(start_ns_, in_.svarint());
      times_ok_ = times_ok_ && end.has_value();
      v = end ? static_cast<T>(*end) : 0;
    } else {  // kSigned, kStart
      v = static_cast<T>(in_.svarint());
      if (e == capture::Encoding::kStart) start_ns_ = static_cast<int64_t>(v);
    }
  }
  template <typename T>
  void optional(capture::Encoding e, std::optional<T>& v) {
    if (optionals_++ == 0) mask_ = in_.varint();
    if (!(mask_ & (uint64_t{1} << (optionals_ - 1)))) return;
    T value{};
    field(e, value);
    v = value;
  }

 private:
  ByteReader& in_;
  uint64_t mask_ = 0;
  int optionals_ = 0;
  int64_t start_ns_ = 0;
  bool times_ok_ = true;
};

// Decodes a record of GPUSCOPE_CAPTURE_RECORDS; false when the body is malformed.
template <typename R>
bool decode(ByteReader& in, R& record, bool* times_ok = nullptr) {
  FieldReader reader(in);
  capture::visit_fields(record, reader);
  if (times_ok) *times_ok = reader.times_ok();
  return in.ok();
}

// Reads one capture into a Trace. Keeps the per-file string ids and the pieces that need the
// process record (pid) until the end.
class CaptureDecoder {
 public:
  explicit CaptureDecoder(const std::string& source) { trace_.source = source; }

  Status run(ByteSource& source, const InputLimits& limits) {
    limits_ = limits;
    const std::string_view head = source.head();
    if (head.size() < capture::kFileHeaderBytes || !looks_like_capture(head)) {
      return Status::error(trace_.source +
                           ": not a gpuscope capture (bad magic at offset 0); pass a file "
                           "written by `gpuscope run`");
    }
    ByteReader header(head.data() + 8, 8);
    uint32_t version = header.u32le();
    if (version != capture::kVersion) {
      return Status::error(trace_.source + ": capture version " + std::to_string(version) +
                           " at offset 8 is not supported (this gpuscope reads version " +
                           std::to_string(capture::kVersion) + "); use a matching gpuscope");
    }
    Window window(source);
    window.skip(capture::kFileHeaderBytes);
    while (window.want(1) > 0 && read_chunk(window)) {
    }
    if (!fatal_.empty()) return Status::error(fatal_);
    if (!window.error().empty()) {
      warn("read error at offset " + offset_text(window.offset()) + " (" + window.error() + "); read up to there");
    }
    finish();
    return ok_status();
  }

  Trace take() { return std::move(trace_); }

 private:
  // Reads the chunk at the window's position and moves past it. False at the end of what can
  // be read (a torn last chunk).
  bool read_chunk(Window& window) {
    const uint64_t offset = window.offset();
    if (window.want(capture::kChunkHeaderBytes) < capture::kChunkHeaderBytes) {
      warn("capture ends inside a chunk header at offset " + offset_text(offset) +
           " (process killed while writing?); read up to there");
      return false;
    }
    ByteReader h(window.data(), capture::kChunkHeaderBytes);
    uint32_t magic = h.u32le();
    uint32_t stored = h.u32le();
    uint32_t raw = h.u32le();
    uint8_t codec = h.u8();
    h.skip(3);
    uint32_t payload_crc = h.u32le();
    uint32_t header_crc = h.u32le();
    if (magic != capture::kChunkMagic || header_crc != capture::crc32_of(window.data(), 20) ||
        stored > capture::kMaxChunkStoredBytes || raw > capture::kMaxChunkRawBytes) {
      window.skip(1);
      resync(window);
      warn("corrupt chunk header at offset " + offset_text(offset) + "; skipped " +
           std::to_string(window.offset() - offset) + " bytes");
      return true;
    }
    const size_t chunk_bytes = capture::kChunkHeaderBytes + stored;
    if (window.want(chunk_bytes) < chunk_bytes) {
      warn("capture ends inside a chunk at offset " + offset_text(offset) +
           " (process killed while writing?); read up to there");
      return false;
    }
    const char* payload = window.data() + capture::kChunkHeaderBytes;
    if (capture::crc32_of(payload, stored) != payload_crc) {
      warn("chunk at offset " + offset_text(offset) + " fails its checksum; skipped");
      window.skip(chunk_bytes);
      return true;
    }
    // The total inflated, not only each chunk, is bounded: 6 MB of chunks once expanded to
    // 7 GB of memory.
    const uint64_t limit = inflate_limit(InflateProfile::kCapture, offset + chunk_bytes, limits_);
    if (inflated_total_ + raw > limit) {
      fatal_ = trace_.source + ": at chunk offset " + offset_text(offset) + ", the capture " +
               inflate_limit_message(InflateProfile::kCapture, limit, offset + chunk_bytes, limits_);
      return false;
    }
    inflated_total_ += raw;
    if (codec == static_cast<uint8_t>(capture::Codec::kRaw)) {
      if (raw != stored) {
        warn("chunk at offset " + offset_text(offset) + " has inconsistent sizes; skipped");
        window.skip(chunk_bytes);
        return true;
      }
      read_records(payload, stored, offset);
    } else if (codec == static_cast<uint8_t>(capture::Codec::kZlib)) {
      inflated_.resize(raw);
      uLongf out_bytes = raw;
      int rc = uncompress(reinterpret_cast<Bytef*>(inflated_.data()), &out_bytes,
                          reinterpret_cast<const Bytef*>(payload), stored);
      if (rc != Z_OK || out_bytes != raw) {
        warn("chunk at offset " + offset_text(offset) + " does not decompress; skipped");
        window.skip(chunk_bytes);
        return true;
      }
      read_records(inflated_.data(), raw, offset);
    } else {
      warn("chunk at offset " + offset_text(offset) + " uses unknown codec " + std::to_string(codec) + "; skipped");
    }
    ++chunks_;
    window.skip(chunk_bytes);
    return true;
  }

  // Moves the window to the next position holding a chunk magic with a valid header checksum,
  // or to the end.
  void resync(Window& window) {
    for (;;) {
      const size_t have = window.want(capture::kChunkHeaderBytes);
      if (have < capture::kChunkHeaderBytes) {
        window.skip(have);
        return;
      }
      const char* d = window.data();
      const char first = static_cast<char>(capture::kChunkMagic & 0xff);
      for (size_t at = 0; at + capture::kChunkHeaderBytes <= have;) {
        const void* hit = std::memchr(d + at, first, have - capture::kChunkHeaderBytes + 1 - at);
        if (!hit) break;
        at = static_cast<size_t>(static_cast<const char*>(hit) - d);
        ByteReader h(d + at, capture::kChunkHeaderBytes);
        if (h.u32le() == capture::kChunkMagic) {
          h.skip(16);
          if (h.u32le() == capture::crc32_of(d + at, 20)) {
            window.skip(at);
            return;
          }
        }
        ++at;
      }
      window.skip(have - capture::kChunkHeaderBytes + 1);
    }
  }

  void read_records(const char* data, size_t bytes, uint64_t chunk_offset) {
    ByteReader r(data, bytes);
    chunk_offset_ = chunk_offset;
    while (!r.done()) {
      record_offset_ = static_cast<uint64_t>(r.position() - data);
      uint8_t type = r.u8();
      uint64_t body_bytes = r.varint();
      if (!r.ok() || body_bytes > r.remaining()) {
        warn("chunk at offset " + offset_text(chunk_offset) +
             " has a truncated record; rest of "
             "the chunk skipped");
        return;
      }
      ByteReader body(r.position(), body_bytes);
      r.skip(body_bytes);
      if (!read_record(static_cast<RecordType>(type), body)) {
        ++bad_records_;
      }
    }
  }

  // CUPTI reports kernel names mangled ("_Z15vector_add..."); the analyses classify kernels by
  // their readable names, as PyTorch's profiler writes them.
  static std::string demangled(std::string_view s) {
    if (!s.starts_with("_Z")) return std::string(s);
    int status = 0;
    const std::string copy(s);
    char* out = abi::__cxa_demangle(copy.c_str(), nullptr, nullptr, &status);
    if (status != 0 || !out) return copy;
    std::string result(out);
    std::free(out);
    return result;
  }

  StringId str(uint64_t file_id) {
    if (file_id == 0) return 0;
    auto it = strings_.find(file_id);
    if (it != strings_.end()) return it->second;
    ++missing_strings_;
    return trace_.strings.intern("<unknown name " + std::to_string(file_id) + ">");
  }

  bool read_record(RecordType type, ByteReader& r) {
    bool times_ok = true;
    switch (type) {
      case RecordType::kString: {
        capture::StringRecord s;
        if (!decode(r, s)) return false;
        strings_[s.id] = trace_.strings.intern(demangled(s.text));
        return true;
      }
      case RecordType::kProcess: {
        capture::ProcessRecord p;
        if (!decode(r, p)) return false;
        pid_ = p.pid;
        trace_.command_line = std::move(p.command_line);
        trace_.rank = p.rank;
        trace_.world_size = p.world_size;
        return true;
      }
      case RecordType::kDevice: {
        Device d;
        if (!decode(r, d)) return false;
        // A later record for the same id replaces the earlier one. Indexed by id: a linear
        // search made 200k records with distinct ids (356 KB of capture) take minutes.
        auto [it, added] = device_index_.try_emplace(d.id, trace_.devices.size());
        if (added)
          trace_.devices.push_back(std::move(d));
        else
          trace_.devices[it->second] = std::move(d);
        return true;
      }
      case RecordType::kKernel: {
        capture::KernelRecord k;
        const bool ok = decode(r, k, &times_ok);
        const StringId name = str(k.name);
        if (!ok) return false;
        if (!times_ok) return bad_time();
        if (untimed(k.end_ns)) return true;
        trace_.kernels.push_back({k.start_ns,
                                  k.end_ns,
                                  k.device,
                                  k.stream,
                                  name,
                                  {k.grid[0], k.grid[1], k.grid[2]},
                                  {k.block[0], k.block[1], k.block[2]},
                                  k.registers_per_thread,
                                  k.shared_memory_bytes,
                                  k.correlation});
        return true;
      }
      case RecordType::kMemcpy: {
        capture::MemcpyRecord m;
        if (!decode(r, m, &times_ok)) return false;
        if (!times_ok) return bad_time();
        if (untimed(m.end_ns)) return true;
        const CopyKind kind = m.copy_kind <= static_cast<uint8_t>(CopyKind::kPtoP) ? static_cast<CopyKind>(m.copy_kind)
                                                                                   : CopyKind::kUnknown;
        const HostMemory host = m.host_memory <= static_cast<uint8_t>(HostMemory::kPinned)
                                    ? static_cast<HostMemory>(m.host_memory)
                                    : HostMemory::kUnknown;
        trace_.memcpys.push_back({m.start_ns, m.end_ns, m.device, m.stream, kind, host, m.bytes, m.correlation});
        return true;
      }
      case RecordType::kMemset: {
        capture::MemsetRecord m;
        if (!decode(r, m, &times_ok)) return false;
        if (!times_ok) return bad_time();
        if (untimed(m.end_ns)) return true;
        trace_.memsets.push_back({m.start_ns, m.end_ns, m.device, m.stream, m.bytes, m.correlation});
        return true;
      }
      case RecordType::kApiCall: {
        capture::ApiCallRecord a;
        const bool ok = decode(r, a, &times_ok);
        const StringId name = str(a.name);
        if (!ok) return false;
        const ApiClass api_class = classify_api(trace_.strings.view(name));
        if (!times_ok) return bad_time();
        trace_.api_calls.push_back({a.start_ns, a.end_ns, 0, a.tid, name, api_class, a.driver, a.correlation});
        return true;
      }
      case RecordType::kRange: {
        capture::RangeRecord n;
        const bool ok = decode(r, n, &times_ok);
        const StringId name = str(n.name);
        str(n.domain);
        if (!ok) return false;
        if (!times_ok) return bad_time();
        trace_.host_events.push_back(HostEvent{.start_ns = n.start_ns,
                                               .end_ns = n.end_ns,
                                               .tid = n.tid,
                                               .name = name,
                                               .kind = HostEventKind::kAnnotation});
        return true;
      }
      case RecordType::kGemm: {
        capture::GemmRecord g;
        const bool ok = decode(r, g, &times_ok);
        const StringId api = str(g.api);  // The cuBLAS entry point.
        if (!ok) return false;
        return add_gemm(g, api, times_ok);
      }
      case RecordType::kDeviceSample: {
        DeviceSample s;
        s.time_ns = r.svarint();
        s.interval_ns = r.svarint();
        s.device = static_cast<int32_t>(r.svarint());
        uint64_t dmask = r.varint();
        uint64_t umask = r.varint();
        uint64_t extra_mask = r.varint();
        if (extra_mask & 1) s.gpu_instance_id = static_cast<int32_t>(r.svarint());
        for (size_t i = 0; i < std::size(capture::kSampleDoubleFields); ++i)
          if (dmask & (uint64_t{1} << i)) s.*capture::kSampleDoubleFields[i] = r.f64();
        for (size_t i = 0; i < std::size(capture::kSampleU64Fields); ++i)
          if (umask & (uint64_t{1} << i)) s.*capture::kSampleU64Fields[i] = r.varint();
        if (!r.ok()) return false;
        if (!event_time_ok(s.time_ns) || s.interval_ns < 0 || s.interval_ns > kMaxEventDurationNs) return bad_time();
        trace_.device_samples.push_back(s);
        return true;
      }
      case RecordType::kStats: {
        capture::StatsRecord s;
        if (!decode(r, s)) return false;
        stats_ = s;
        return true;
      }
      case RecordType::kTracingCost: {
        TracingCost c;
        if (!decode(r, c)) return false;
        // A cost outside (0, 1 s) per launch is not a measurement; keep the trace, drop it.
        auto plausible = [](double v) { return std::isfinite(v) && v > 0 && v < 1e9; };
        if (plausible(c.plain_launch_ns) && plausible(c.traced_launch_ns)) {
          trace_.tracing_cost = c;
        } else {
          warn("implausible tracing-cost record ignored");
        }
        return true;
      }
      case RecordType::kSync:
      case RecordType::kMemory:
        // Recorded for later analyses; the trace model has no place for them yet (the API
        // calls that caused them are in api_calls).
        return true;
    }
    ++unknown_records_;
    return true;
  }

  // An interposed cuBLAS call: a host op named for its entry point, with the GEMM it performed
  // as a matmul record (the FLOP counter, precision mix and GEMM findings read that).
  bool add_gemm(const capture::GemmRecord& g, StringId api, bool times_ok) {
    if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 1) return false;
    if (!times_ok) return bad_time();
    trace_.host_events.push_back(HostEvent{.start_ns = g.start_ns,
                                           .end_ns = g.end_ns,
                                           .tid = g.tid,
                                           .name = api,
                                           .kind = HostEventKind::kOp,
                                           .first_matmul = static_cast<uint32_t>(trace_.matmuls.size()),
                                           .num_matmuls = 1});
    // cuBLAS is column-major: C (m x n) = op(A) (m x k) * op(B) (k x n). Row-major callers
    // (PyTorch: y = x W^T) see C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m), so the record's
    // rows (the tokens) are cuBLAS's n, its columns cuBLAS's m, and its A operand cuBLAS's B.
    // c_type and the transposes do not change the FLOP count.
    trace_.matmuls.push_back({g.n, g.m, g.k, g.batch, precision_of(g.b_type), api});
    ++gemms_;
    return true;
  }

  // GPU work CUPTI could not time (its start and end are 0: work already in flight when a
  // bounded window enabled the activity kinds): dropped, as it happened at no known time.
  static bool untimed(int64_t end_ns) { return end_ns <= 0; }

  // A well-formed record whose times are out of range: dropped, counted, the first one named.
  bool bad_time() {
    if (bad_times_++ == 0) {
      first_bad_time_ = "chunk at offset " + offset_text(chunk_offset_) + ", record at byte " +
                        offset_text(record_offset_) + " of its payload";
    }
    return true;
  }

  void finish() {
    for (auto& e : trace_.host_events) e.pid = pid_;
    for (auto& a : trace_.api_calls) a.pid = pid_;
    trace_.sort_events();
    align_gemm_threads();
    if (chunks_ == 0)
      warn(
          "capture holds no complete chunk (the process ended before the "
          "first flush?)");
    if (!stats_ || !stats_->clean_exit)
      warn(
          "capture has no clean-exit record: the process was killed or is still running; "
          "events after the last flushed chunk are missing");
    if (stats_ && (stats_->dropped_records > 0 || stats_->dropped_buffers > 0))
      warn("tracer dropped " + std::to_string(stats_->dropped_records) + " records and " +
           std::to_string(stats_->dropped_buffers) + " activity buffers; counts are lower bounds");
    if (bad_records_ > 0) warn(std::to_string(bad_records_) + " malformed records skipped");
    if (bad_times_ > 0)
      warn(std::to_string(bad_times_) + " records with times out of range dropped (first: " + first_bad_time_ +
           "); times must lie within +-3e18 ns and durations under 1e15 ns");
    if (unknown_records_ > 0)
      warn(std::to_string(unknown_records_) + " records of unknown type skipped (newer writer?)");
    if (missing_strings_ > 0)
      warn(std::to_string(missing_strings_) +
           " names refer to a lost chunk and read as "
           "<unknown name N>");
  }

  // The GEMM interposer names threads by gettid(); CUPTI's API records use its own thread ids.
  // Map each interposer thread to the CUPTI thread whose launch calls fall inside its GEMM
  // calls (majority vote), so the analyses can see which op launched which kernel.
  void align_gemm_threads() {
    std::map<int32_t, std::map<int32_t, int64_t>> votes;
    const auto& calls = trace_.api_calls;
    for (const HostEvent& e : trace_.host_events) {
      if (e.kind != HostEventKind::kOp) continue;
      auto it = std::lower_bound(calls.begin(), calls.end(), e.start_ns,
                                 [](const ApiCall& c, int64_t t) { return c.start_ns < t; });
      for (; it != calls.end() && it->start_ns < e.end_ns; ++it) {
        if (it->api_class == ApiClass::kLaunch) ++votes[e.tid][it->tid];
      }
    }
    std::map<int32_t, int32_t> remap;
    for (const auto& [tid, counts] : votes) {
      auto best = std::max_element(counts.begin(), counts.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      remap[tid] = best->first;
    }
    for (HostEvent& e : trace_.host_events) {
      if (e.kind != HostEventKind::kOp) continue;
      if (auto it = remap.find(e.tid); it != remap.end()) e.tid = it->second;
    }
  }

  // Warnings do not repeat the path: whoever shows them names the trace (the analysis
  // prefixes Trace::source), as for the Kineto reader.
  void warn(std::string line) { trace_.warnings.push_back(std::move(line)); }

  Trace trace_;
  std::unordered_map<uint64_t, StringId> strings_;
  std::unordered_map<int32_t, size_t> device_index_;  // Device id -> index in trace_.devices.
  std::string inflated_;
  InputLimits limits_;
  uint64_t inflated_total_ = 0;
  std::string fatal_;
  uint64_t chunk_offset_ = 0, record_offset_ = 0;
  size_t bad_times_ = 0;
  std::string first_bad_time_;
  std::optional<capture::StatsRecord> stats_;
  int32_t pid_ = 0;
  size_t chunks_ = 0;
  size_t bad_records_ = 0;
  size_t unknown_records_ = 0;
  size_t missing_strings_ = 0;
  size_t gemms_ = 0;
};

}  // namespace

bool looks_like_capture(std::string_view first_bytes) {
  return first_bytes.size() >= sizeof(capture::kMagic) &&
         std::memcmp(first_bytes.data(), capture::kMagic, sizeof(capture::kMagic)) == 0;
}

StatusOr<Trace> read_capture_source(ByteSource& source, const std::string& name, const InputLimits& limits) {
  CaptureDecoder decoder(name);
  RETURN_IF_ERROR(decoder.run(source, limits));
  return decoder.take();
}

StatusOr<Trace> read_capture_bytes(std::string_view bytes, const std::string& source) {
  auto in = ByteSource::memory(bytes);
  return read_capture_source(*in, source, InputLimits{});
}

StatusOr<Trace> read_capture_file(const std::string& path, const InputLimits& limits) {
  auto source = ByteSource::open(path, limits);
  if (!source.ok()) {
    return Status::error(path + ": " + source.status().message() + "; check the path");
  }
  return read_capture_source(*source.value(), path, limits);
}

}  // namespace gpuscope
