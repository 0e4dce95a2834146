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
  kSync = 11,         // CUPTI synchronization activity.
  kMemory = 12,       // Device memory allocation or free.
  kStats = 13,        // Running totals; the last one wins.
  kTracingCost = 14,  // Host ns per launch call plain and traced (`gpuscope run`); the last one wins.
};

// ----- The record schemas, each written once. -----
//
// A record's body is its fields in table order, each in its encoding; after the fields every record
// carries (F rows) come, where a record has optional fields (O rows), a varint presence mask (bit i
// set: the i-th optional is present) and then the values present. The writer (CaptureWriter::add)
// and the reader (input/capture_reader.cpp) both walk these tables (visit_fields), and the record
// structs below are generated from them. Never reorder, remove or re-encode a field: a new field
// goes at the end of a table that has optionals, as an optional (older readers ignore what follows
// in the body; newer ones read it as absent from older files). A table without optionals cannot
// gain one (its old records have no mask): add a record type.
//
//   F(type, member, initial value, encoding)    O(type, member, encoding)
//
// Encodings: kSigned (zigzag LEB128), kUnsigned (LEB128), kByte (one byte; bool as 0 or 1),
// kF64 (IEEE double, little-endian), kString (varint length, bytes), kStart (kSigned, and the
// start of the record's interval), kEnd (kSigned of end - start: the interval's duration),
// kUnsigned3 (three LEB128). String fields (StringRef) are ids defined by earlier kString records
// of the same file; 0 is "no string".
enum class Encoding : uint8_t { kSigned, kUnsigned, kByte, kF64, kString, kStart, kEnd, kUnsigned3 };

using StringRef = uint64_t;
using U32x3 = std::array<uint32_t, 3>;

// Pieces several tables share: an interval (start, then duration), and the device and stream
// it ran on; a copy or set's size and links.
#define GPUSCOPE_CAPTURE_INTERVAL(F) F(int64_t, start_ns, 0, kStart) F(int64_t, end_ns, 0, kEnd)
#define GPUSCOPE_CAPTURE_ON_STREAM(F) \
  GPUSCOPE_CAPTURE_INTERVAL(F) F(int32_t, device, 0, kSigned) F(int32_t, stream, 0, kSigned)
#define GPUSCOPE_CAPTURE_COPY_LINKS(O) \
  O(uint64_t, bytes, kUnsigned) O(uint64_t, correlation, kUnsigned) O(uint32_t, graph_id, kUnsigned)

#define GPUSCOPE_CAPTURE_STRING(F, O) \
  F(StringRef, id, 0, kUnsigned)      \
  F(std::string, text, {}, kString)

#define GPUSCOPE_CAPTURE_PROCESS(F, O)                                                \
  F(int32_t, pid, 0, kSigned)                                                         \
  F(int32_t, ppid, 0, kSigned)                                                        \
  F(int64_t, start_ns, 0, kSigned)                                                    \
  F(std::string, hostname, {}, kString)                                               \
  F(std::string, command_line, {}, kString)                                           \
  F(std::string, tool_version, {}, kString)                                           \
  O(int32_t, rank, kSigned) /* From RANK / WORLD_SIZE when the launcher sets them. */ \
  O(int32_t, world_size, kSigned)

// Over the core's Device: a device record carries exactly the core's device description.
#define GPUSCOPE_CAPTURE_DEVICE(F, O)     \
  F(int32_t, id, 0, kSigned)              \
  F(std::string, name, {}, kString)       \
  O(int32_t, num_sms, kSigned)            \
  O(int32_t, cc_major, kSigned)           \
  O(int32_t, cc_minor, kSigned)           \
  O(uint64_t, memory_bytes, kUnsigned)    \
  O(int32_t, max_threads_per_sm, kSigned) \
  O(int32_t, regs_per_sm, kSigned)        \
  O(int32_t, shared_mem_per_sm_bytes, kSigned)

#define GPUSCOPE_CAPTURE_KERNEL(F, O)       \
  GPUSCOPE_CAPTURE_ON_STREAM(F)             \
  F(StringRef, name, 0, kUnsigned)          \
  F(U32x3, grid, {}, kUnsigned3)            \
  F(U32x3, block, {}, kUnsigned3)           \
  O(int32_t, registers_per_thread, kSigned) \
  O(int32_t, shared_memory_bytes, kSigned)  \
  O(uint64_t, correlation, kUnsigned)       \
  O(uint32_t, graph_id, kUnsigned) /* Kernels launched as CUDA Graph nodes. */

// copy_kind uses the core's CopyKind numbering, host_memory the core's HostMemory.
#define GPUSCOPE_CAPTURE_MEMCPY(F, O) \
  GPUSCOPE_CAPTURE_ON_STREAM(F)       \
  F(uint8_t, copy_kind, 0, kByte)     \
  F(uint8_t, host_memory, 0, kByte)   \
  GPUSCOPE_CAPTURE_COPY_LINKS(O)

#define GPUSCOPE_CAPTURE_MEMSET(F, O) GPUSCOPE_CAPTURE_ON_STREAM(F) GPUSCOPE_CAPTURE_COPY_LINKS(O)

#define GPUSCOPE_CAPTURE_API_CALL(F, O) \
  GPUSCOPE_CAPTURE_INTERVAL(F)          \
  F(int32_t, tid, 0, kSigned)           \
  F(StringRef, name, 0, kUnsigned)      \
  F(bool, driver, false, kByte)         \
  O(uint64_t, correlation, kUnsigned)

// An NVTX range (start < end) or mark (start == end).
#define GPUSCOPE_CAPTURE_RANGE(F, O) \
  GPUSCOPE_CAPTURE_INTERVAL(F)       \
  F(int32_t, tid, 0, kSigned)        \
  F(StringRef, name, 0, kUnsigned)   \
  F(StringRef, domain, 0, kUnsigned) /* 0: the default domain. */

// One cuBLAS / cuBLASLt GEMM call, from the interposer; host time around the call (issue, not
// execution). Data types are cudaDataType_t values (library_types.h), so the file does not
// depend on the reader knowing every type. transposes: bit 0 A, bit 1 B.
#define GPUSCOPE_CAPTURE_GEMM(F, O)                                            \
  GPUSCOPE_CAPTURE_INTERVAL(F)                                                 \
  F(int32_t, tid, 0, kSigned)                                                  \
  F(StringRef, api, 0, kUnsigned) /* e.g. "cublasLtMatmul", "cublasGemmEx". */ \
  F(int64_t, m, 0, kSigned)                                                    \
  F(int64_t, n, 0, kSigned)                                                    \
  F(int64_t, k, 0, kSigned)                                                    \
  F(int64_t, batch, 1, kSigned)                                                \
  F(int32_t, a_type, -1, kSigned)                                              \
  F(int32_t, b_type, -1, kSigned)                                              \
  F(int32_t, c_type, -1, kSigned)                                              \
  F(uint8_t, transposes, 0, kByte)

// A CUPTI synchronization activity; type is CUpti_ActivitySynchronizationType.
#define GPUSCOPE_CAPTURE_SYNC(F, O) \
  GPUSCOPE_CAPTURE_INTERVAL(F)      \
  F(uint8_t, type, 0, kByte)        \
  O(int32_t, stream, kSigned)       \
  O(uint64_t, correlation, kUnsigned)

// A device memory allocation or free; memory_kind is CUpti_ActivityMemoryKind.
#define GPUSCOPE_CAPTURE_MEMORY(F, O) \
  F(int64_t, time_ns, 0, kSigned)     \
  F(int32_t, device, 0, kSigned)      \
  F(bool, is_free, false, kByte)      \
  F(uint8_t, memory_kind, 0, kByte)   \
  F(uint64_t, address, 0, kUnsigned)  \
  F(uint64_t, bytes, 0, kUnsigned)    \
  O(uint64_t, correlation, kUnsigned)

// Running totals; the last one wins. clean_exit is set by the final record at process exit.
#define GPUSCOPE_CAPTURE_STATS(F, O)                                                     \
  F(uint64_t, records, 0, kUnsigned)         /* Records written so far. */               \
  F(uint64_t, dropped_records, 0, kUnsigned) /* CUPTI or the interposer dropped them. */ \
  F(uint64_t, dropped_buffers, 0, kUnsigned) /* Activity buffers the writer refused. */  \
  F(uint64_t, unknown_activities, 0, kUnsigned)                                          \
  F(bool, clean_exit, false, kByte)

// Over the core's TracingCost: host ns per launch call plain and traced; the last one wins.
#define GPUSCOPE_CAPTURE_TRACING_COST(F, O) \
  F(double, plain_launch_ns, 0, kF64)       \
  F(double, traced_launch_ns, 0, kF64)

// Every record but the device sample (below): struct, its table, its type tag.
#define GPUSCOPE_CAPTURE_RECORDS(X)                     \
  X(StringRecord, GPUSCOPE_CAPTURE_STRING, kString)     \
  X(ProcessRecord, GPUSCOPE_CAPTURE_PROCESS, kProcess)  \
  X(DeviceRecord, GPUSCOPE_CAPTURE_DEVICE, kDevice)     \
  X(KernelRecord, GPUSCOPE_CAPTURE_KERNEL, kKernel)     \
  X(MemcpyRecord, GPUSCOPE_CAPTURE_MEMCPY, kMemcpy)     \
  X(MemsetRecord, GPUSCOPE_CAPTURE_MEMSET, kMemset)     \
  X(ApiCallRecord, GPUSCOPE_CAPTURE_API_CALL, kApiCall) \
  X(RangeRecord, GPUSCOPE_CAPTURE_RANGE, kRange)        \
  X(GemmRecord, GPUSCOPE_CAPTURE_GEMM, kGemm)           \
  X(SyncRecord, GPUSCOPE_CAPTURE_SYNC, kSync)           \
  X(MemoryRecord, GPUSCOPE_CAPTURE_MEMORY, kMemory)     \
  X(StatsRecord, GPUSCOPE_CAPTURE_STATS, kStats)        \
  X(TracingCostRecord, GPUSCOPE_CAPTURE_TRACING_COST, kTracingCost)

#define GPUSCOPE_CAPTURE_MEMBER(type, member, init, encoding) type member = init;
#define GPUSCOPE_CAPTURE_OPTIONAL_MEMBER(type, member, encoding) std::optional<type> member;
#define GPUSCOPE_CAPTURE_STRUCT(name, table)                         \
  struct name {                                                      \
    table(GPUSCOPE_CAPTURE_MEMBER, GPUSCOPE_CAPTURE_OPTIONAL_MEMBER) \
  };
GPUSCOPE_CAPTURE_STRUCT(StringRecord, GPUSCOPE_CAPTURE_STRING)
GPUSCOPE_CAPTURE_STRUCT(ProcessRecord, GPUSCOPE_CAPTURE_PROCESS)
GPUSCOPE_CAPTURE_STRUCT(KernelRecord, GPUSCOPE_CAPTURE_KERNEL)
GPUSCOPE_CAPTURE_STRUCT(MemcpyRecord, GPUSCOPE_CAPTURE_MEMCPY)
GPUSCOPE_CAPTURE_STRUCT(MemsetRecord, GPUSCOPE_CAPTURE_MEMSET)
GPUSCOPE_CAPTURE_STRUCT(ApiCallRecord, GPUSCOPE_CAPTURE_API_CALL)
GPUSCOPE_CAPTURE_STRUCT(RangeRecord, GPUSCOPE_CAPTURE_RANGE)
GPUSCOPE_CAPTURE_STRUCT(GemmRecord, GPUSCOPE_CAPTURE_GEMM)
GPUSCOPE_CAPTURE_STRUCT(SyncRecord, GPUSCOPE_CAPTURE_SYNC)
GPUSCOPE_CAPTURE_STRUCT(MemoryRecord, GPUSCOPE_CAPTURE_MEMORY)
GPUSCOPE_CAPTURE_STRUCT(StatsRecord, GPUSCOPE_CAPTURE_STATS)
#undef GPUSCOPE_CAPTURE_STRUCT
#undef GPUSCOPE_CAPTURE_MEMBER
#undef GPUSCOPE_CAPTURE_OPTIONAL_MEMBER
using DeviceRecord = ::gpuscope::Device;
using TracingCostRecord = ::gpuscope::TracingCost;

// Calls v.field(Encoding, member) for each F row and v.optional(Encoding, member) for each O row
// of the record's table, in file order. R may be const (writing) or not (reading); for the
// records over core structs the members' types are checked against the table.
#define GPUSCOPE_CAPTURE_VISIT_FIELD(type, member, init, encoding)               \
  static_assert(std::is_same_v<decltype(std::remove_cvref_t<R>::member), type>); \
  v.field(Encoding::encoding, r.member);
#define GPUSCOPE_CAPTURE_VISIT_OPTIONAL(type, member, encoding)                                 \
  static_assert(std::is_same_v<decltype(std::remove_cvref_t<R>::member), std::optional<type>>); \
  v.optional(Encoding::encoding, r.member);
#define GPUSCOPE_CAPTURE_VISIT(name, table, tag)                                                         \
  template <typename R, typename V>                                                                      \
  requires std::is_same_v<std::remove_cvref_t<R>, name>                                                  \
  void visit_fields(R& r, V& v) { table(GPUSCOPE_CAPTURE_VISIT_FIELD, GPUSCOPE_CAPTURE_VISIT_OPTIONAL) } \
  constexpr RecordType record_type(const name*) { return RecordType::tag; }
GPUSCOPE_CAPTURE_RECORDS(GPUSCOPE_CAPTURE_VISIT)
#undef GPUSCOPE_CAPTURE_VISIT
#undef GPUSCOPE_CAPTURE_VISIT_FIELD
#undef GPUSCOPE_CAPTURE_VISIT_OPTIONAL

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
  void svarint(int64_t v) { varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
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

namespace detail {
// The presence mask of a record's optional fields.
struct PresenceMask {
  uint64_t bits = 0;
  int count = 0;
  template <typename T>
  void field(Encoding, const T&) {}
  template <typename T>
  void optional(Encoding, const std::optional<T>& v) {
    if (v) bits |= uint64_t{1} << count;
    ++count;
  }
};

struct FieldWriter {
  ByteWriter& out;
  uint64_t mask;  // PresenceMask::bits, written before the first optional field.
  int optionals = 0;
  int64_t start_ns = 0;
  template <typename T>
  void field(Encoding e, const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      out.str(v);
    } else if constexpr (std::is_same_v<T, U32x3>) {
      for (uint32_t x : v) out.varint(x);
    } else if constexpr (std::is_same_v<T, double>) {
      out.f64(v);
    } else if (e == Encoding::kByte) {
      out.u8(static_cast<uint8_t>(v));
    } else if (e == Encoding::kUnsigned) {
      out.varint(static_cast<uint64_t>(v));
    } else if (e == Encoding::kEnd) {
      out.svarint(static_cast<int64_t>(v) - start_ns);
    } else {  // kSigned, kStart
      if (e == Encoding::kStart) start_ns = static_cast<int64_t>(v);
      out.svarint(static_cast<int64_t>(v));
    }
  }
  template <typename T>
  void optional(Encoding e, const std::optional<T>& v) {
    if (optionals++ == 0) out.varint(mask);
    if (v) field(e, *v);
  }
};
}  // namespace detail

// Encodes one record's body from its table (visit_fields): the F rows, then, where the record has
// optional fields, the presence mask and the values present. Header-only, for the injection
// library; input/capture_reader.cpp's FieldReader is the inverse.
template <typename R>
void encode_fields(ByteWriter& out, const R& record) {
  detail::PresenceMask mask;
  visit_fields(record, mask);
  detail::FieldWriter writer{out, mask.bits};
  visit_fields(record, writer);
}

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
