#include "core/steps.h"
#include "input/capture_reader.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "capture/capture_format.h"
#include "capture/capture_writer.h"
#include "input/test_temp.h"

namespace gpuscope {
namespace {

using capture::CaptureWriter;

// A path in a folder unique to this test program (mkdtemp), removed with it at exit.
std::string temp_path(const char* name) {
  static testing_support::TempDir dir;
  return dir.file(name);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Writes a small capture: one device, two kernels (one in a graph), a copy, a set, API calls,
// NVTX steps, a GEMM, a device sample, and (optionally) the clean-exit stats record.
// chunk_bytes small enough that the file has several chunks.
std::string write_sample(const std::string& path, bool compress, bool clean_exit, size_t chunk_bytes = 64) {
  CaptureWriter w;
  CaptureWriter::Options o;
  o.compress = compress;
  o.chunk_bytes = chunk_bytes;
  std::string error;
  EXPECT_TRUE(w.open(path, o, &error)) << error;
  capture::ProcessRecord p;
  p.pid = 4242;
  p.rank = 1;
  p.world_size = 8;
  p.command_line = "python train.py";
  w.add(p);
  capture::DeviceRecord d;
  d.id = 0;
  d.name = "NVIDIA H200";
  d.num_sms = 132;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.memory_bytes = 150ull << 30;
  w.add(d);
  for (int step = 0; step < 2; ++step) {
    const int64_t base = 1'000'000'000 + step * 10'000'000;
    capture::RangeRecord range;
    range.start_ns = base;
    range.end_ns = base + 9'000'000;
    range.tid = 7;
    range.name = w.intern("train_step");
    w.add(range);
    capture::ApiCallRecord api;
    api.start_ns = base + 100;
    api.end_ns = base + 2'000;
    api.tid = 7;
    api.name = w.intern("cudaLaunchKernel");
    api.correlation = 10 + step;
    w.add(api);
    capture::KernelRecord k;
    k.start_ns = base + 5'000;
    k.end_ns = base + 1'005'000;
    k.device = 0;
    k.stream = 7;
    k.name = w.intern("ampere_sgemm_128x64_nn");
    k.grid[0] = 132;
    k.grid[1] = k.grid[2] = 1;
    k.block[0] = 256;
    k.block[1] = k.block[2] = 1;
    k.registers_per_thread = 128;
    k.shared_memory_bytes = 49152;
    k.correlation = 10 + step;
    if (step == 1) k.graph_id = 3;
    w.add(k);
    capture::GemmRecord g;
    g.start_ns = base + 50;
    g.end_ns = base + 2'100;
    g.tid = 7;
    g.api = w.intern("cublasLtMatmul");
    g.m = 1024;
    g.n = 768;
    g.k = 3072;
    g.batch = step == 0 ? 1 : 12;
    g.a_type = g.b_type = g.c_type = 14;  // CUDA_R_16BF
    w.add(g);
  }
  capture::MemcpyRecord m;
  m.start_ns = 1'050'000'000;
  m.end_ns = 1'050'100'000;
  m.copy_kind = static_cast<uint8_t>(CopyKind::kHtoD);
  m.host_memory = static_cast<uint8_t>(HostMemory::kPinned);
  m.bytes = 1 << 20;
  w.add(m);
  capture::MemsetRecord s;
  s.start_ns = 1'060'000'000;
  s.end_ns = 1'060'000'500;
  s.bytes = 4096;
  w.add(s);
  DeviceSample ds;
  ds.time_ns = 1'100'000'000;
  ds.interval_ns = 100'000'000;
  ds.sm_active_pct = 86.5;
  ds.tensor_active_pct = 29.0;
  ds.memory_used_bytes = 1ull << 34;
  ds.gpu_instance_id = 2;
  w.add(ds);
  if (clean_exit) {
    capture::StatsRecord st;
    st.records = w.records();
    st.clean_exit = true;
    w.add(st);
  }
  w.close();
  return slurp(path);
}

TEST(Capture, MagicIsRecognised) {
  std::string bytes = write_sample(temp_path("magic"), true, true);
  EXPECT_TRUE(looks_like_capture(bytes));
  EXPECT_FALSE(looks_like_capture("{\"traceEvents\": []}"));
  EXPECT_FALSE(looks_like_capture(std::string_view(bytes).substr(0, 4)));
}

void expect_full_sample(const Trace& t) {
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(t.devices[0].num_sms, 132);
  EXPECT_EQ(t.devices[0].memory_bytes, 150ull << 30);
  EXPECT_FALSE(t.devices[0].max_threads_per_sm.has_value());
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.world_size, 8);
  ASSERT_EQ(t.kernels.size(), 2u);
  const Kernel& k = t.kernels[0];
  EXPECT_EQ(k.start_ns, 1'000'005'000);
  EXPECT_EQ(k.end_ns, 1'001'005'000);
  EXPECT_EQ(t.strings.view(k.name), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(k.grid.x, 132u);
  EXPECT_EQ(k.block.x, 256u);
  EXPECT_EQ(k.registers_per_thread, 128);
  EXPECT_EQ(k.shared_memory_bytes, 49152);
  EXPECT_EQ(k.correlation, 10u);
  ASSERT_EQ(t.api_calls.size(), 2u);
  EXPECT_EQ(t.strings.view(t.api_calls[0].name), "cudaLaunchKernel");
  EXPECT_EQ(t.api_calls[0].api_class, ApiClass::kLaunch);
  EXPECT_EQ(t.api_calls[0].pid, 4242);
  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys[0].kind, CopyKind::kHtoD);
  EXPECT_EQ(t.memcpys[0].host_memory, HostMemory::kPinned);
  EXPECT_EQ(t.memcpys[0].bytes, 1u << 20);
  EXPECT_FALSE(t.memcpys[0].correlation.has_value());
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].bytes, 4096u);
  ASSERT_EQ(t.device_samples.size(), 1u);
  EXPECT_DOUBLE_EQ(*t.device_samples[0].sm_active_pct, 86.5);
  EXPECT_DOUBLE_EQ(*t.device_samples[0].tensor_active_pct, 29.0);
  EXPECT_FALSE(t.device_samples[0].gpu_util_pct.has_value());
  EXPECT_EQ(t.device_samples[0].memory_used_bytes, 1ull << 34);
  EXPECT_EQ(t.device_samples[0].gpu_instance_id, 2);
  // The reader only decodes; the core finds steps from the NVTX ranges.
  const StepDetection steps = detect_steps(t, "");
  EXPECT_EQ(steps.source, StepSource::kNvtxRange);
  ASSERT_EQ(steps.steps.size(), 2u);
  EXPECT_EQ(steps.steps[1].start_ns, 1'010'000'000);
  EXPECT_EQ(steps.steps[1].end_ns, 1'019'000'000);
  // GEMMs as host ops named for their cuBLAS entry point, each with its matmul record; no
  // PyTorch names or argument lists are made up.
  int mm = 0, bmm = 0;
  for (const auto& e : t.host_events) {
    if (e.kind != HostEventKind::kOp) continue;
    EXPECT_EQ(t.strings.view(e.name), "cublasLtMatmul");
    EXPECT_EQ(e.num_args, 0);
    ASSERT_EQ(e.num_matmuls, 1);
    const Matmul& m = t.matmuls_of(e).front();
    EXPECT_EQ(m.dtype, Precision::kBf16);
    EXPECT_EQ(t.strings.view(m.source), "cublasLtMatmul");
    // cuBLAS m=1024, n=768, k=3072 (column-major) is the row-major [768, 3072] x [3072, 1024]:
    // the tokens (the record's m) are cuBLAS's n.
    EXPECT_EQ(m.m, 768);
    EXPECT_EQ(m.n, 1024);
    EXPECT_EQ(m.k, 3072);
    if (m.batch == 1) {
      ++mm;
    } else {
      EXPECT_EQ(m.batch, 12);
      ++bmm;
    }
  }
  EXPECT_EQ(mm, 1);
  EXPECT_EQ(bmm, 1);
}

TEST(Capture, RoundTripCompressed) {
  std::string path = temp_path("rt_z");
  write_sample(path, true, true);
  auto t = read_capture_file(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  expect_full_sample(*t);
  EXPECT_TRUE(t->warnings.empty()) << t->warnings[0];
}

TEST(Capture, RoundTripRawOneChunk) {
  std::string path = temp_path("rt_raw");
  write_sample(path, false, true, 1 << 20);
  auto t = read_capture_file(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  expect_full_sample(*t);
}

TEST(Capture, MissingCleanExitIsAWarningNotAnError) {
  std::string bytes = write_sample(temp_path("noexit"), true, false);
  auto t = read_capture_bytes(bytes, "x.gpuscope");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->kernels.size(), 2u);
  ASSERT_FALSE(t->warnings.empty());
  EXPECT_NE(t->warnings[0].find("clean-exit"), std::string::npos);
}

// Every truncation point yields a trace (never an error once the header is whole) holding a
// prefix of the events: what a killed process leaves behind.
TEST(Capture, EveryTruncationReadsUpToLastCompleteChunk) {
  std::string bytes = write_sample(temp_path("trunc"), true, true);
  size_t previous_kernels = 0;
  for (size_t cut = capture::kFileHeaderBytes; cut <= bytes.size(); ++cut) {
    auto t = read_capture_bytes(std::string_view(bytes).substr(0, cut), "cut");
    ASSERT_TRUE(t.ok()) << "cut at " << cut << ": " << t.status().message();
    EXPECT_GE(t->kernels.size(), previous_kernels) << "cut at " << cut;
    previous_kernels = t->kernels.size();
    if (cut < bytes.size()) {
      EXPECT_FALSE(t->warnings.empty()) << "cut at " << cut;
    }
  }
  EXPECT_EQ(previous_kernels, 2u);
}

TEST(Capture, ShortOrForeignFileIsAnErrorNamingTheFile) {
  auto t = read_capture_bytes("\x89GPUSCA", "short.gpuscope");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("short.gpuscope"), std::string::npos);
  EXPECT_NE(t.status().message().find("offset 0"), std::string::npos);
  std::string bytes = write_sample(temp_path("ver"), true, true);
  bytes[8] = 99;  // Version.
  auto v = read_capture_bytes(bytes, "v.gpuscope");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("version 99"), std::string::npos);
}

// A flipped byte inside one chunk loses that chunk only; the reader resynchronises.
TEST(Capture, CorruptChunkIsSkippedAndReadingContinues) {
  std::string bytes = write_sample(temp_path("corrupt"), false, true);
  auto clean = read_capture_bytes(bytes, "clean");
  ASSERT_TRUE(clean.ok());
  size_t total_events =
      clean->kernels.size() + clean->api_calls.size() + clean->host_events.size() + clean->memcpys.size();
  int damaged_runs = 0;
  for (size_t at = capture::kFileHeaderBytes; at < bytes.size(); at += 7) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    auto t = read_capture_bytes(bad, "bad");
    ASSERT_TRUE(t.ok()) << at;
    size_t events = t->kernels.size() + t->api_calls.size() + t->host_events.size() + t->memcpys.size();
    EXPECT_LE(events, total_events);
    if (!t->warnings.empty()) ++damaged_runs;
  }
  EXPECT_GT(damaged_runs, 0);
  // Corrupting the middle chunk's payload keeps later chunks.
  std::string bad = bytes;
  bad[bytes.size() / 2] ^= 0x01;
  auto t = read_capture_bytes(bad, "mid");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->device_samples.empty()) << "chunks after the damaged one must still be read";
}

TEST(Capture, UnknownRecordTypesAreSkipped) {
  std::string path = temp_path("unknown");
  CaptureWriter w;
  std::string error;
  ASSERT_TRUE(w.open(path, {}, &error));
  w.flush();
  w.close();
  // Hand-build a chunk with an unknown record type 200 followed by a string record.
  capture::ByteWriter raw;
  raw.u8(200);
  raw.varint(3);
  raw.u8(1);
  raw.u8(2);
  raw.u8(3);
  raw.u8(static_cast<uint8_t>(capture::RecordType::kString));
  capture::ByteWriter body;
  body.varint(1);
  body.str("hello");
  raw.varint(body.size());
  raw.buffer() += body.buffer();
  capture::ByteWriter chunk;
  chunk.u32le(capture::kChunkMagic);
  chunk.u32le(static_cast<uint32_t>(raw.size()));
  chunk.u32le(static_cast<uint32_t>(raw.size()));
  chunk.u32le(0);
  chunk.u32le(capture::crc32_of(raw.buffer().data(), raw.size()));
  chunk.u32le(capture::crc32_of(chunk.buffer().data(), 20));
  std::string bytes = slurp(path) + chunk.buffer() + raw.buffer();
  auto t = read_capture_bytes(bytes, "u");
  ASSERT_TRUE(t.ok());
  bool mentioned = false;
  for (const auto& w2 : t->warnings) mentioned |= w2.find("unknown type") != std::string::npos;
  EXPECT_TRUE(mentioned);
}

TEST(Capture, ProfilerStepNumbersComeFromTheName) {
  std::string path = temp_path("pstep");
  CaptureWriter w;
  std::string error;
  ASSERT_TRUE(w.open(path, {}, &error));
  for (int i = 5; i < 8; ++i) {
    capture::RangeRecord r;
    r.start_ns = i * 1000;
    r.end_ns = i * 1000 + 900;
    r.name = w.intern("ProfilerStep#" + std::to_string(i));
    w.add(r);
  }
  w.close();
  auto t = read_capture_file(path);
  ASSERT_TRUE(t.ok());
  const StepDetection steps = detect_steps(*t, "");
  EXPECT_EQ(steps.source, StepSource::kProfilerStep);
  ASSERT_EQ(steps.steps.size(), 3u);
  EXPECT_EQ(steps.steps[0].number, 5);
  EXPECT_EQ(steps.steps[2].number, 7);
}

TEST(Capture, VarintsRoundTripExtremes) {
  capture::ByteWriter w;
  const int64_t values[] = {0, 1, -1, INT64_MAX, INT64_MIN, 1'700'000'000'000'000'000};
  for (int64_t v : values) w.svarint(v);
  w.varint(UINT64_MAX);
  capture::ByteReader r(w.buffer().data(), w.size());
  for (int64_t v : values) EXPECT_EQ(r.svarint(), v);
  EXPECT_EQ(r.varint(), UINT64_MAX);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.done());
  EXPECT_EQ(r.u8(), 0);
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

// A sample capture at `path` (write_sample) with one more chunk appended by `add`, as
// `gpuscope run` appends device samples and the tracing cost after the program ends.
template <class AddRecords>
void write_appended(const std::string& path, AddRecords add) {
  write_sample(path, true, true);
  capture::CaptureWriter w;
  std::string error;
  ASSERT_TRUE(w.open_append(path, {}, &error)) << error;
  add(w);
  w.close();
}

TEST(Capture, AppendedChunksAreRead) {
  std::string path = temp_path("append");
  write_appended(path, [](capture::CaptureWriter& w) {
    DeviceSample s;
    s.time_ns = 2'000'000'000;
    s.tensor_active_pct = 12.5;
    w.add(s);
    w.intern("a string defined in the appended chunk");
  });
  auto t = read_capture_file(path);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->device_samples.size(), 2u);
  EXPECT_DOUBLE_EQ(*t->device_samples[1].tensor_active_pct, 12.5);
  EXPECT_EQ(t->kernels.size(), 2u);
  EXPECT_TRUE(t->warnings.empty());
}

// An implausible tracing cost is dropped with a warning and the rest of the capture still reads.
TEST(Capture, TracingCostIsReadAndImplausibleOnesAreDropped) {
  std::string path = temp_path("tracing_cost");
  write_appended(path, [](capture::CaptureWriter& w) { w.add(TracingCost{4614.2, 7359.5}); });
  auto t = read_capture_file(path);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->tracing_cost.has_value());
  EXPECT_DOUBLE_EQ(t->tracing_cost->plain_launch_ns, 4614.2);
  EXPECT_DOUBLE_EQ(t->tracing_cost->traced_launch_ns, 7359.5);
  EXPECT_NEAR(t->tracing_cost->added_ns(), 2745.3, 1e-6);

  std::string bad = temp_path("tracing_cost_bad");
  write_appended(bad, [](capture::CaptureWriter& w) { w.add(TracingCost{-1.0, 7359.5}); });
  auto u = read_capture_file(bad);
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->tracing_cost.has_value());
  ASSERT_EQ(u->warnings.size(), 1u);
  EXPECT_NE(u->warnings[0].find("tracing-cost"), std::string::npos);
  EXPECT_EQ(u->kernels.size(), 2u);
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

// CUPTI names kernels mangled and threads by its own ids; the interposer uses gettid(). The
// reader demangles names and moves each GEMM call onto the thread whose launches it contains.
TEST(Capture, DemanglesKernelsAndAlignsGemmThreads) {
  const std::string path = temp_path("align");
  {
    CaptureWriter w;
    CaptureWriter::Options o;
    std::string error;
    ASSERT_TRUE(w.open(path, o, &error)) << error;
    capture::ApiCallRecord api;
    api.start_ns = 1'000;
    api.end_ns = 2'000;
    api.tid = 123456;  // CUPTI's id for the thread.
    api.name = w.intern("cuLaunchKernelEx");
    api.correlation = 5;
    w.add(api);
    capture::KernelRecord k;
    k.start_ns = 3'000;
    k.end_ns = 9'000;
    k.name = w.intern("_Z10vector_addPfS_S_i");
    k.correlation = 5;
    w.add(k);
    capture::GemmRecord g;
    g.start_ns = 900;
    g.end_ns = 2'100;
    g.tid = 77;  // gettid() of the same thread.
    g.api = w.intern("cublasLtMatmul");
    g.m = g.n = g.k = 64;
    g.batch = 1;
    g.a_type = g.b_type = g.c_type = 14;
    w.add(g);
    capture::StatsRecord st;
    st.clean_exit = true;
    w.add(st);
  }
  auto t = read_capture_file(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->kernels.size(), 1u);
  EXPECT_EQ(t->strings.view(t->kernels[0].name), "vector_add(float*, float*, float*, int)");
  ASSERT_EQ(t->host_events.size(), 1u);
  EXPECT_EQ(t->host_events[0].tid, 123456);
}

// ---- Bounded inputs, checked times, pipes --------------------------------------

// The file header and one chunk framed around `raw` (zlib-compressed when `compress`), with
// correct checksums.
std::string file_header() {
  capture::ByteWriter h;
  h.buffer().append(capture::kMagic, sizeof(capture::kMagic));
  h.u32le(capture::kVersion);
  h.u32le(0);
  return h.buffer();
}

std::string framed_chunk(const std::string& raw, bool compress) {
  std::string stored = raw;
  if (compress) {
    uLongf bound = compressBound(static_cast<uLong>(raw.size()));
    stored.resize(bound);
    EXPECT_EQ(compress2(reinterpret_cast<Bytef*>(stored.data()), &bound, reinterpret_cast<const Bytef*>(raw.data()),
                        static_cast<uLong>(raw.size()), 9),
              Z_OK);
    stored.resize(bound);
  }
  capture::ByteWriter chunk;
  chunk.u32le(capture::kChunkMagic);
  chunk.u32le(static_cast<uint32_t>(stored.size()));
  chunk.u32le(static_cast<uint32_t>(raw.size()));
  chunk.u32le(compress ? 1 : 0);
  chunk.u32le(capture::crc32_of(stored.data(), stored.size()));
  chunk.u32le(capture::crc32_of(chunk.buffer().data(), 20));
  return chunk.buffer() + stored;
}

long max_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

TEST(Capture, SmallFileCannotInflateToGigabytes) {
  // A 6.2 MB capture inflated to 7.2 GB of memory (each chunk is capped, the total
  // was not). Here 100 chunks of one 64 MiB record of zeros (6.4 GB raw, about 6.5 MB stored).
  capture::ByteWriter raw;
  raw.u8(200);                          // An unknown record type: skipped by its length, so reading is quick.
  const size_t body = (64u << 20) - 5;  // Type byte and a 4-byte length before it.
  raw.varint(body);
  raw.buffer().append(body, '\0');
  ASSERT_EQ(raw.size(), 64u << 20);
  const std::string chunk = framed_chunk(raw.buffer(), true);
  std::string bytes = file_header();
  for (int i = 0; i < 100; ++i) bytes += chunk;
  EXPECT_LT(bytes.size(), 8u << 20);
  const std::string path = temp_path("bomb.gpuscope");
  std::ofstream(path, std::ios::binary) << bytes;
  auto t = read_capture_file(path);
  ASSERT_FALSE(t.ok());
  const std::string& msg = t.status().message();
  EXPECT_NE(msg.find("decompresses to more than 268.4 MB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--max-inflate"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bomb.gpuscope: at chunk offset"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  EXPECT_LT(max_rss_mb(), 1024) << "MB of memory to refuse it";
  // Raised explicitly, past the floor, such a file reads (6 chunks here, to stay quick).
  const std::string six = temp_path("six.gpuscope");
  std::ofstream(six, std::ios::binary) << bytes.substr(0, capture::kFileHeaderBytes + 6 * chunk.size());
  EXPECT_FALSE(read_capture_file(six).ok());
  InputLimits limits;
  limits.max_inflate_bytes = 512ull << 20;
  auto raised = read_capture_file(six, limits);
  ASSERT_TRUE(raised.ok()) << raised.status().message();
}

TEST(Capture, SparseTwoGigabyteFileIsStreamed) {
  // A 2 GB sparse capture (a header, then zeros) was read whole into memory.
  const std::string path = temp_path("sparse.gpuscope");
  std::ofstream(path, std::ios::binary) << file_header() << framed_chunk(std::string(), false);
  ASSERT_EQ(truncate(path.c_str(), 2ll << 30), 0);
  auto t = read_capture_file(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  bool skipped = false;
  for (const auto& w : t->warnings) skipped |= w.find("skipped 2147483608 bytes") != std::string::npos;
  EXPECT_TRUE(skipped) << (t->warnings.empty() ? "" : t->warnings[0]);
  EXPECT_LT(max_rss_mb(), 256) << "MB of memory to read a 2 GB file";
}

TEST(Capture, TimesThatOverflowAreDroppedWithTheirOffset) {
  // Found by a CRC-fixing fuzzer: start + duration overflowed int64 (undefined
  // behaviour; in Release, busy 100% instead of 67.8% and windows of 9.2e12 ms).
  capture::ByteWriter raw;
  auto kernel = [&](int64_t start, int64_t duration) {
    capture::ByteWriter b;
    b.svarint(start);
    b.svarint(duration);
    b.svarint(0);                             // device
    b.svarint(7);                             // stream
    b.varint(0);                              // name
    for (int i = 0; i < 6; ++i) b.varint(1);  // grid, block
    b.varint(0);                              // mask
    raw.u8(static_cast<uint8_t>(capture::RecordType::kKernel));
    raw.varint(b.size());
    raw.buffer() += b.buffer();
  };
  kernel(1'000'000, 500);
  kernel(INT64_MAX - 5, 100);    // Overflows.
  kernel(1'000'000, INT64_MAX);  // Overflows.
  kernel(-INT64_MAX, 10);        // Absurd.
  kernel(2'000'000, 500);
  const std::string bytes = file_header() + framed_chunk(raw.buffer(), false);
  auto t = read_capture_bytes(bytes, "times.gpuscope");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->kernels.size(), 2u);
  EXPECT_EQ(t->kernels[1].end_ns, 2'000'500);
  bool named = false;
  for (const auto& w : t->warnings) {
    named |= w.find("3 records with times out of range dropped (first: chunk at offset 16, record at byte") !=
             std::string::npos;
  }
  EXPECT_TRUE(named) << ::testing::PrintToString(t->warnings);
}

TEST(Capture, ReadFromAPipe) {
  const std::string bytes = write_sample(temp_path("pipe"), true, true);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::thread writer([&] {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = write(fds[1], bytes.data() + done, std::min<size_t>(bytes.size() - done, 100));
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(fds[1]);
  });
  auto t = read_capture_file("/dev/fd/" + std::to_string(fds[0]));
  writer.join();
  close(fds[0]);
  ASSERT_TRUE(t.ok()) << t.status().message();
  expect_full_sample(*t);
}

TEST(Capture, ManyDeviceRecordsReadInLinearTime) {
  // 200k device records (356 KB of capture) took 24.7 s, then minutes with distinct
  // ids: each record searched every device read before it.
  for (const bool distinct : {false, true}) {
    capture::ByteWriter raw;
    for (int i = 0; i < 200'000; ++i) {
      capture::ByteWriter b;
      b.svarint(distinct ? i : 0);
      b.str("NVIDIA H200");
      b.varint(1);
      b.svarint(132);
      raw.u8(static_cast<uint8_t>(capture::RecordType::kDevice));
      raw.varint(b.size());
      raw.buffer() += b.buffer();
    }
    const std::string bytes = file_header() + framed_chunk(raw.buffer(), true);
    const auto start = std::chrono::steady_clock::now();
    auto t = read_capture_bytes(bytes, "devices.gpuscope");
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->devices.size(), distinct ? 200'000u : 1u);
    EXPECT_EQ(t->devices.back().num_sms, 132);
    EXPECT_LT(took, 5.0) << (distinct ? "distinct ids" : "one id");
  }
}

TEST(Capture, DeeplyNestedRangesReadInLinearTime) {
  // 160k nested NVTX ranges took 43 s to analyse. The reader's share must stay
  // linear (the analysis's host index is a separate matter).
  capture::ByteWriter raw;
  raw.u8(static_cast<uint8_t>(capture::RecordType::kString));
  capture::ByteWriter name;
  name.varint(1);
  name.str("range");
  raw.varint(name.size());
  raw.buffer() += name.buffer();
  const int n = 160'000;
  for (int i = 0; i < n; ++i) {
    capture::ByteWriter b;
    b.svarint(1'000'000'000 + i);
    b.svarint(2 * (n - i));
    b.svarint(7);
    b.varint(1);
    b.varint(0);
    raw.u8(static_cast<uint8_t>(capture::RecordType::kRange));
    raw.varint(b.size());
    raw.buffer() += b.buffer();
  }
  const std::string bytes = file_header() + framed_chunk(raw.buffer(), true);
  const auto start = std::chrono::steady_clock::now();
  auto t = read_capture_bytes(bytes, "nested.gpuscope");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->host_events.size(), static_cast<size_t>(n));
  EXPECT_LT(took, 5.0);
}

}  // namespace
}  // namespace gpuscope
