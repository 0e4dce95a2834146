// Gzip inflate speed of the three Debian inflaters on a Kineto trace: zlib, libdeflate and
// ISA-L (igzip). Measured to choose the reader's inflater (docs/validation.md, "Performance").
//
// Input: GPUSCOPE_INFLATE_INPUT=FILE.json.gz, or by default the real traces of testdata/pytorch
// inflated, concatenated and recompressed in memory with zlib level 9 (what Python's gzip
// module, and so torch.profiler's export_chrome_trace, writes). The compressed bytes are held
// in memory; each benchmark inflates them all. Counter `MB/s`: uncompressed output per second of
// the one thread.
//
// Streaming: zlib and ISA-L inflate into a fixed 4 MiB window, as the reader does. libdeflate
// has no streaming interface: it needs the whole member's output buffer (sized from the
// member's ISIZE trailer, which is the size mod 2^32), so its memory is the uncompressed size.
#include <benchmark/benchmark.h>
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr size_t kWindow = 4 << 20;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string gunzip_all(const std::string& gz) {
  std::string out;
  z_stream s{};
  inflateInit2(&s, 15 + 16);
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  s.avail_in = static_cast<uInt>(gz.size());
  std::vector<char> buf(kWindow);
  for (;;) {  // Every member.
    s.next_out = reinterpret_cast<Bytef*>(buf.data());
    s.avail_out = kWindow;
    const int rc = inflate(&s, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) throw std::runtime_error("corrupt test input");
    out.append(buf.data(), kWindow - s.avail_out);
    if (rc == Z_STREAM_END) {
      if (s.avail_in == 0) break;
      inflateReset(&s);
    }
  }
  inflateEnd(&s);
  return out;
}

std::string gzip_level9(const std::string& raw) {
  z_stream s{};
  deflateInit2(&s, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&s, raw.size()), '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  s.avail_in = static_cast<uInt>(raw.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  deflate(&s, Z_FINISH);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

struct Input {
  std::string gz;
  uint64_t raw_bytes = 0;
};

const Input& input() {
  static const Input in = [] {
    Input i;
    if (const char* path = std::getenv("GPUSCOPE_INFLATE_INPUT"); path && *path) {
      i.gz = read_file(path);
      i.raw_bytes = gunzip_all(i.gz).size();
      return i;
    }
    std::string raw;
    const std::string dir = std::string(GPUSCOPE_SOURCE_DIR) + "/testdata/pytorch/";
    for (const char* name : {"fp32_sync", "bf16_sync", "bf16_async", "bf16_compile"}) {
      raw += gunzip_all(read_file(dir + name + ".json.gz"));
    }
    i.raw_bytes = raw.size();
    i.gz = gzip_level9(raw);
    return i;
  }();
  return in;
}

void report(benchmark::State& state, uint64_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["MB/s"] =
      benchmark::Counter(static_cast<double>(bytes) * state.iterations() / 1e6, benchmark::Counter::kIsRate);
  state.counters["ratio"] = static_cast<double>(bytes) / static_cast<double>(input().gz.size());
}

void BM_Zlib(benchmark::State& state) {
  const Input& in = input();
  std::vector<char> window(kWindow);
  for (auto _ : state) {
    z_stream s{};
    inflateInit2(&s, 15 + 16);
    s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.gz.data()));
    s.avail_in = static_cast<uInt>(in.gz.size());
    uint64_t total = 0;
    for (int rc = Z_OK; rc != Z_STREAM_END;) {
      s.next_out = reinterpret_cast<Bytef*>(window.data());
      s.avail_out = kWindow;
      rc = inflate(&s, Z_NO_FLUSH);
      if (rc == Z_STREAM_END && s.avail_in > 0) {  // Another member.
        total += kWindow - s.avail_out;
        inflateReset(&s);
        rc = Z_OK;
        continue;
      }
      if (rc != Z_OK && rc != Z_STREAM_END) state.SkipWithError("zlib: corrupt");
      total += kWindow - s.avail_out;
      if (rc != Z_OK && rc != Z_STREAM_END) break;
    }
    inflateEnd(&s);
    if (total != in.raw_bytes) state.SkipWithError("zlib: wrong size");
  }
  report(state, in.raw_bytes);
}

void BM_Libdeflate(benchmark::State& state) {
  const Input& in = input();
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  std::vector<char> out;
  for (auto _ : state) {
    uint64_t total = 0;
    size_t pos = 0;
    while (pos < in.gz.size()) {
      // ISIZE: the member's size mod 2^32; the buffer needs the true size (here known).
      const size_t need = in.raw_bytes - total;
      if (out.size() < need) out.resize(need);
      size_t used = 0, produced = 0;
      const auto rc = libdeflate_gzip_decompress_ex(d, in.gz.data() + pos, in.gz.size() - pos, out.data(), out.size(),
                                                    &used, &produced);
      if (rc != LIBDEFLATE_SUCCESS) {
        state.SkipWithError("libdeflate: failed");
        break;
      }
      pos += used;
      total += produced;
    }
    if (total != in.raw_bytes) state.SkipWithError("libdeflate: wrong size");
  }
  libdeflate_free_decompressor(d);
  report(state, in.raw_bytes);
}

void BM_Isal(benchmark::State& state) {
  const Input& in = input();
  std::vector<unsigned char> window(kWindow);
  inflate_state s;
  for (auto _ : state) {
    isal_inflate_init(&s);
    s.crc_flag = ISAL_GZIP;
    s.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(in.gz.data()));
    s.avail_in = static_cast<uint32_t>(in.gz.size());
    uint64_t total = 0;
    for (;;) {
      s.next_out = window.data();
      s.avail_out = kWindow;
      const int rc = isal_inflate(&s);
      total += kWindow - s.avail_out;
      if (rc != ISAL_DECOMP_OK) {
        state.SkipWithError("isa-l: corrupt");
        break;
      }
      if (s.block_state == ISAL_BLOCK_FINISH) {
        if (s.avail_in == 0) break;
        // Another member: keep the unread input.
        uint8_t* next = s.next_in;
        const uint32_t left = s.avail_in;
        isal_inflate_reset(&s);
        s.crc_flag = ISAL_GZIP;
        s.next_in = next;
        s.avail_in = left;
      }
    }
    if (total != in.raw_bytes) state.SkipWithError("isa-l: wrong size");
  }
  report(state, in.raw_bytes);
}

BENCHMARK(BM_Zlib)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Libdeflate)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Isal)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
