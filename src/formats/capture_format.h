// gpuscope capture file format, version 1: what `libgpuscope_inject.so` writes and
// read_capture_file() reads. Shared by the writer (which runs inside the traced process and so
// depends on nothing but zlib) and the reader.
//
// Layout (all integers little-endian):
//   file header, 16 bytes: kMagic (8) | u32 version | u32 flags (0)
//   then chunks, appended one at a time with a single write() each:
//     chunk header, 24 bytes: u32 kChunkMagic | u32 stored_bytes | u32 raw_bytes |
//                             u8 codec | u8[3] zero | u32 payload_crc32 | u32 header_crc32
//     payload: stored_bytes bytes; codec 0 = raw, 1 = zlib (deflate) of raw_bytes bytes.
//   header_crc32 covers the first 20 header bytes, payload_crc32 the stored payload, so a reader
//   can tell a torn last chunk (process killed mid-write) from corruption, skip a bad chunk and
//   resynchronise on the next chunk magic.
//   A raw payload is a sequence of records: u8 type | varint body_bytes | body. Unknown types
//   are skipped by length (forward compatibility). Bodies are LEB128 varints (signed values
//   zigzag-encoded), strings as varint length + bytes, optional values behind a presence bitmask.
//   Strings are interned per file: a kString record defines an id before any record uses it.
//
// Clock domain: every timestamp is int64 nanoseconds of the traced host's CLOCK_REALTIME (CUPTI's
// default clock on Linux, and the clock of DeviceSample), so captures of several processes and
// device samples line up.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/device_sample.h"
#include "core/trace.h"

namespace gpuscope::capture {

inline constexpr char kMagic[8] = {'\x89', 'G', 'P', 'U', 'S', 'C', 'A', 'P'};
inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kChunkMagic = 0x4b484347;  // "GCHK" little-endian.
inline constexpr size_t kFileHeaderBytes = 16;
inline constexpr size_t kChunkHeaderBytes = 24;
// Limits a reader enforces before allocating; the writer stays far below them.
inline constexpr uint32_t kMaxChunkStoredBytes = 64u << 20;
inline constexpr uint32_t kMaxChunkRawBytes = 256u << 20;

enum class Codec : uint8_t { kRaw = 0, kZlib = 1 };

enum class RecordType : uint8_t {
  kProcess = 1,
  kString = 2,
  kDevice = 3,
  kKernel = 4,
  kMemcpy = 5,
  kMemset = 6,
  kApiCall = 7,
  kRange = 8,  // NVTX range (start < end) or mark (start == end).
  kGemm = 9,   // One cuBLAS / cuBLASLt GEMM call, from the interposer.
  kDeviceSample = 10,
  kSync = 11,    // CUPTI synchronization activity.
  kMemory = 12,  // Device memory allocation or free.
  kStats = 13,   // Running totals; the last one wins.
  kTracingCost = 14,  // Host ns per launch call plain and traced (`gpuscope run`); the last one wins.
};

// The records, as the writer takes them and the reader decodes them. String fields are ids
// defined by earlier kString records of the same file.
struct ProcessRecord {
  int32_t pid = 0;
  int32_t ppid = 0;
  int64_t start_ns = 0;
  std::string hostname;
  std::string command_line;
  std::optional<int32_t> rank;        // From RANK / WORLD_SIZE when the launcher sets them.
  std::optional<int32_t> world_size;
  std::string tool_version;
};

// A device record carries exactly the core's device description.
using DeviceRecord = ::gpuscope::Device;

struct KernelRecord {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t device = 0;
  int32_t stream = 0;
  uint32_t name = 0;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  std::optional<int32_t> registers_per_thread;
  std::optional<int32_t> shared_memory_bytes;
  std::optional<uint64_t> correlation;
  std::optional<uint32_t> graph_id;  // Set for kernels launched as CUDA Graph nodes.
};

// copy_kind uses the core's CopyKind numbering, host_memory the core's HostMemory.
struct MemcpyRecord {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t device = 0;
  int32_t stream = 0;
  uint8_t copy_kind = 0;
  uint8_t host_memory = 0;
  std::optional<uint64_t> bytes;
  std::optional<uint64_t> correlation;
  std::optional<uint32_t> graph_id;
};

struct MemsetRecord {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t device = 0;
  int32_t stream = 0;
  std::optional<uint64_t> bytes;
  std::optional<uint64_t> correlation;
  std::optional<uint32_t> graph_id;
};

struct ApiCallRecord {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t tid = 0;
  uint32_t name = 0;
  bool driver = false;
  std::optional<uint64_t> correlation;
};

struct RangeRecord {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t tid = 0;
  uint32_t name = 0;
  uint32_t domain = 0;  // 0: the default domain.
};

// cuBLAS data types are stored as their cudaDataType_t values (library_types.h), so the file
// does not depend on the reader knowing every type: unknown values read as "unknown".
struct GemmRecord {
  int64_t start_ns = 0;  // Host time around the cuBLAS call (issue, not execution).
  int64_t end_ns = 0;
  int32_t tid = 0;
  uint32_t api = 0;  // e.g. "cublasLtMatmul", "cublasGemmEx".
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  int32_t a_type = -1, b_type = -1, c_type = -1;
  bool trans_a = false, trans_b = false;
};

struct SyncRecord {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint8_t type = 0;  // CUpti_ActivitySynchronizationType.
  std::optional<int32_t> stream;
  std::optional<uint64_t> correlation;
};

struct MemoryRecord {
  int64_t time_ns = 0;
  int32_t device = 0;
  bool is_free = false;
  uint8_t memory_kind = 0;  // CUpti_ActivityMemoryKind.
  uint64_t address = 0;
  uint64_t bytes = 0;
  std::optional<uint64_t> correlation;
};

struct StatsRecord {
  uint64_t records = 0;          // Records written so far.
  uint64_t dropped_records = 0;  // Records CUPTI or the interposer reported as dropped.
  uint64_t dropped_buffers = 0;  // Activity buffers the writer could not accept.
  uint64_t unknown_activities = 0;
  bool clean_exit = false;  // Set by the final record written at process exit.
};

// A TracingCost is stored as two f64: plain_launch_ns, traced_launch_ns.
using TracingCostRecord = ::gpuscope::TracingCost;

// DeviceSample fields in their file order (version 1): a u32 presence mask for the doubles,
// then one for the integers, then a mask for the rest (bit 0: gpu_instance_id, zigzag varint),
// then the present values. Each mask's bits follow GPUSCOPE_DEVICE_SAMPLE_FIELDS
// (core/device_sample.h) restricted to that type; new fields are appended there, never reordered.
template <typename T>
constexpr auto sample_fields_of_type() {
  constexpr size_t kCount = 0
#define GPUSCOPE_SAMPLE_COUNT(member, type, gpm, unit) +(std::is_same_v<type, T> ? 1 : 0)
      GPUSCOPE_DEVICE_SAMPLE_FIELDS(GPUSCOPE_SAMPLE_COUNT);
#undef GPUSCOPE_SAMPLE_COUNT
  std::array<std::optional<T> DeviceSample::*, kCount> fields{};
  size_t i = 0;
#define GPUSCOPE_SAMPLE_FIELD(member, type, gpm, unit) \
  if constexpr (std::is_same_v<type, T>) fields[i++] = &DeviceSample::member;
  GPUSCOPE_DEVICE_SAMPLE_FIELDS(GPUSCOPE_SAMPLE_FIELD)
#undef GPUSCOPE_SAMPLE_FIELD
  return fields;
}
inline constexpr auto kSampleDoubleFields = sample_fields_of_type<double>();
inline constexpr auto kSampleU64Fields = sample_fields_of_type<uint64_t>();
// Version 1 holds 21 doubles and 3 integers; their masks are u32.
static_assert(kSampleDoubleFields.size() >= 21 && kSampleDoubleFields.size() <= 32);
static_assert(kSampleDoubleFields[20] == &DeviceSample::nvlink_tx_bytes_per_s);
static_assert(kSampleU64Fields.size() >= 3 && kSampleU64Fields[2] == &DeviceSample::throttle_reasons);

// ----- Encoding helpers (header-only so the injection library needs no other code). -----

uint32_t crc32_of(const void* data, size_t bytes);  // zlib's CRC-32; defined in capture_writer.cpp

class ByteWriter {
 public:
  void u8(uint8_t v) { buf_.push_back(static_cast<char>(v)); }
  void u32le(uint32_t v) {
    for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      u8(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    u8(static_cast<uint8_t>(v));
  }
  void svarint(int64_t v) {
    varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void str(std::string_view s) {
    varint(s.size());
    buf_.append(s.data(), s.size());
  }
  void f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    for (int i = 0; i < 8; ++i) u8(static_cast<uint8_t>(bits >> (8 * i)));
  }
  std::string& buffer() { return buf_; }
  size_t size() const { return buf_.size(); }
  void clear() { buf_.clear(); }

 private:
  std::string buf_;
};

// Bounds-checked reads; after any failure ok() is false and every read returns 0.
class ByteReader {
 public:
  ByteReader(const char* data, size_t bytes) : p_(data), end_(data + bytes) {}
  bool ok() const { return ok_; }
  bool done() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const char* position() const { return p_; }
  uint8_t u8() {
    if (p_ >= end_) return fail();
    return static_cast<uint8_t>(*p_++);
  }
  uint32_t u32le() {
    if (remaining() < 4) return fail();
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(p_[i])} << (8 * i);
    p_ += 4;
    return v;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return fail();
      uint8_t b = static_cast<uint8_t>(*p_++);
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    return fail();
  }
  int64_t svarint() {
    uint64_t u = varint();
    return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  std::string_view str() {
    uint64_t n = varint();
    if (!ok_ || n > remaining()) return fail(), std::string_view();
    std::string_view s(p_, n);
    p_ += n;
    return s;
  }
  double f64() {
    if (remaining() < 8) return fail();
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= uint64_t{static_cast<uint8_t>(p_[i])} << (8 * i);
    p_ += 8;
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  void skip(size_t n) {
    if (n > remaining()) {
      fail();
      return;
    }
    p_ += n;
  }

 private:
  uint8_t fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

}  // namespace gpuscope::capture
