// Inputs as a hostile or careless user gives them: pipes, stdin, a FIFO with no
// writer, a symlink loop, gzip bombs, a gzip without its trailer, bytes after the JSON.
#include "input/input_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "input/kineto_reader.h"
#include "input/test_temp.h"
#include "input/trace_input.h"

namespace gpuscope {
namespace {

using testing_support::TempDir;

const char* kTrace =
    R"json({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
            "args": {"device": 0, "stream": 7}}]})json";

// One gzip member holding `data`.
std::string gzip(const std::string& data, int level = 6) {
  std::string out(compressBound(static_cast<uLong>(data.size())) + 64, '\0');
  z_stream z{};
  deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Writes `bytes` to the write end of a new pipe from a thread; returns the read end.
int pipe_with(const std::string& bytes, std::thread& writer) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  writer = std::thread([fd = fds[1], bytes] {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(fd);
  });
  return fds[0];
}

TEST(InputSource, ProcessSubstitutionPipeIsReadOnce) {
  // `gpuscope analyze <(zcat trace.json.gz)`: the path is /dev/fd/N of a pipe; the sniffed
  // bytes used to be consumed and the pipe reopened.
  std::thread writer;
  const int fd = pipe_with(gzip(kTrace), writer);
  auto t = read_trace_file("/dev/fd/" + std::to_string(fd));
  writer.join();
  close(fd);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->kernels.size(), 1u);
  EXPECT_TRUE(t->warnings.empty());
}

TEST(InputSource, StdinDash) {
  std::thread writer;
  const int fd = pipe_with(kTrace, writer);
  const int saved = dup(0);
  ASSERT_EQ(dup2(fd, 0), 0);
  auto t = read_trace_file("-");
  dup2(saved, 0);
  close(saved);
  close(fd);
  writer.join();
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->kernels.size(), 1u);
  EXPECT_EQ(t->source, "<stdin>");
  auto expanded = expand_trace_paths({"-"});
  ASSERT_TRUE(expanded.ok());
  EXPECT_EQ(expanded.value(), std::vector<std::string>{"-"});
}

TEST(InputSource, FifoWithoutWriterTimesOutWithAClearMessage) {
  TempDir dir;
  const std::string fifo = dir.file("trace.json");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  InputLimits limits;
  limits.read_timeout_s = 0.3;
  const auto start = std::chrono::steady_clock::now();
  auto t = read_trace_file(fifo, limits);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("nothing is writing to this pipe"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("GPUSCOPE_INPUT_TIMEOUT"), std::string::npos);
  EXPECT_LT(waited, 5.0);
}

TEST(InputSource, WriterThatStallsAfterOneByteTimesOut) {
  // A FIFO that sends one byte and stalls used to block forever: only the first byte waited
  // with a timeout.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(write(fds[1], "{", 1), 1);
  InputLimits limits;
  limits.read_timeout_s = 0.3;
  const auto start = std::chrono::steady_clock::now();
  auto t = read_trace_file("/dev/fd/" + std::to_string(fds[0]), limits);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(fds[1]);
  close(fds[0]);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("stalled"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("GPUSCOPE_INPUT_TIMEOUT"), std::string::npos) << t.status().message();
  EXPECT_LT(waited, 5.0);
}

TEST(InputSource, FileTruncatedWhileReadEndsEarly) {
  // A file truncated by another process while it was memory-mapped killed the reader with
  // SIGBUS. Now the read just ends where the file does.
  TempDir dir;
  const std::string path = dir.write("shrinks.json", std::string(1 << 20, ' '));
  auto opened = ByteSource::open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  ByteSource& source = *opened.value();
  std::string buffer(4096, '\0'), error;
  ASSERT_GT(source.read(buffer.data(), buffer.size(), error), 0u);  // The head, at least.
  ASSERT_GT(source.read(buffer.data(), buffer.size(), error), 0u);
  ASSERT_EQ(truncate(path.c_str(), 100), 0);
  size_t more = 0;
  while (size_t got = source.read(buffer.data(), buffer.size(), error)) more += got;
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_LE(more, 100u);
}

TEST(InputSource, FifoWithAWriterIsRead) {
  TempDir dir;
  const std::string fifo = dir.file("trace.json");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    const int fd = open(fifo.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const std::string text = kTrace;
    EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
  });
  auto t = read_trace_file(fifo);
  writer.join();
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->kernels.size(), 1u);
}

TEST(InputSource, SymlinkLoopIsNamedAsSuch) {
  TempDir dir;
  const std::string link = dir.file("loop.json");
  ASSERT_EQ(symlink(link.c_str(), link.c_str()), 0);
  auto expanded = expand_trace_paths({link});
  ASSERT_FALSE(expanded.ok());
  EXPECT_NE(expanded.status().message().find("symlink loop"), std::string::npos) << expanded.status().message();
  auto t = read_trace_file(link);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("symlink loop"), std::string::npos) << t.status().message();
}

TEST(InputSource, DirectoryWithSymlinkLoopsIsListedWithoutThrowing) {
  // `ln -s a d/b; ln -s b d/a` beside a trace: listing the directory used to throw
  // filesystem_error (SIGABRT). Loops without a trace's name are left out; one with a trace's
  // name is listed, and reading it says it is a loop.
  TempDir dir;
  const std::string trace = dir.write("rank0.json", kTrace);
  ASSERT_EQ(symlink("b", dir.file("a").c_str()), 0);
  ASSERT_EQ(symlink("a", dir.file("b").c_str()), 0);
  ASSERT_EQ(symlink("loop.json", dir.file("loop.json").c_str()), 0);
  auto expanded = expand_trace_paths({dir.path()});
  ASSERT_TRUE(expanded.ok()) << expanded.status().message();
  EXPECT_EQ(expanded.value(), (std::vector<std::string>{dir.file("loop.json"), trace}));
  auto t = read_trace_file(dir.file("loop.json"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("symlink loop"), std::string::npos) << t.status().message();
}

TEST(InputSource, GzipWithoutTrailerWarns) {
  std::string gz = gzip(kTrace);
  gz.resize(gz.size() - 8);  // CRC-32 and length gone.
  auto t = read_kineto_buffer(gz, "no-trailer");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->kernels.size(), 1u);
  ASSERT_EQ(t->warnings.size(), 1u);
  EXPECT_NE(t->warnings[0].find("without its trailer"), std::string::npos) << t->warnings[0];
}

TEST(InputSource, TrailingGarbageWarns) {
  // After the JSON text.
  auto t = read_kineto_buffer(std::string(kTrace) + "\n}garbage", "text");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->warnings.size(), 1u);
  EXPECT_NE(t->warnings[0].find("ignored 8 bytes after the end of the JSON"), std::string::npos) << t->warnings[0];
  // After the gzip stream.
  auto g = read_kineto_buffer(gzip(kTrace) + "GARBAGE!", "gz");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->warnings.size(), 1u);
  EXPECT_NE(g->warnings[0].find("ignored 8 bytes after the end of the gzip data"), std::string::npos) << g->warnings[0];
  // Two gzip members read as one stream (what gzip and zcat do), with no warning.
  const std::string text = kTrace;
  auto two = read_kineto_buffer(gzip(text.substr(0, 40)) + gzip(text.substr(40)), "members");
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_EQ(two->kernels.size(), 1u);
  EXPECT_TRUE(two->warnings.empty());
}

TEST(InputSource, OneHugeJsonStringFailsEarly) {
  // A 3 MB .json.gz holding one 3 GB string reached 4.2 GB of memory and then a
  // misleading "read error". Built here from gzip members (8 MiB of 'a' each, 384 times).
  const std::string block = gzip(std::string(8 << 20, 'a'), 9);
  std::string file = gzip(R"json({"traceEvents": [], "x": ")json");
  for (int i = 0; i < 384; ++i) file += block;
  file += gzip(R"json("})json");
  ASSERT_LT(file.size(), 4u << 20);
  const auto start = std::chrono::steady_clock::now();
  auto t = read_kineto_buffer(file, "string.json.gz");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(t.ok());
  const std::string& msg = t.status().message();
  // The single-value limit (16 MiB) trips before the inflate budget (256 MiB here).
  EXPECT_NE(msg.find("a single JSON value"), std::string::npos) << msg;
  EXPECT_NE(msg.find("more than 16.8 MB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--max-inflate"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  EXPECT_LT(took, 60.0);
}

TEST(InputSource, OneHugeKernelNameFailsEarly) {
  // A 243 KB .json.gz with one 250 MB kernel name took 1.78 GB and 20 s, and exit 0. Here
  // 40 MB: past the single-value limit, an error naming the byte and the flag.
  const std::string name(40 << 20, 'k');
  const std::string json =
      std::string(R"json({"traceEvents": [{"ph": "X", "cat": "kernel", "name": ")json") + name +
      R"json(", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7}}]})json";
  auto t = read_kineto_buffer(gzip(json, 9), "name.json.gz");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("a single JSON value"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("--max-inflate"), std::string::npos) << t.status().message();
}

TEST(InputSource, InflateBudgetStopsACompressionBomb) {
  // 300 MB of whitespace inside the event list compresses about 1000:1: past 100x the
  // compressed size (and the 256 MiB floor) it is an error naming the limit and the flag.
  const std::string block = gzip(std::string(4 << 20, ' '), 9);
  std::string file = gzip(R"json({"traceEvents": [)json");
  for (int i = 0; i < 75; ++i) file += block;
  file += gzip(R"json(]})json");
  auto t = read_kineto_buffer(file, "bomb.json.gz");
  ASSERT_FALSE(t.ok());
  const std::string& msg = t.status().message();
  EXPECT_NE(msg.find("decompresses to more than 268.4 MB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("GPUSCOPE_MAX_INFLATE"), std::string::npos) << msg;

  // Raised by the user, the same file reads (an empty trace).
  TempDir dir;
  InputLimits limits;
  limits.max_inflate_bytes = 1ull << 30;
  auto raised = read_trace_file(dir.write("bomb.json.gz", file), limits);
  ASSERT_TRUE(raised.ok()) << raised.status().message();
  EXPECT_TRUE(raised->kernels.empty());
}

TEST(InputSource, LimitsFromTheEnvironmentAndSizes) {
  EXPECT_EQ(parse_byte_size("512M"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("4G"), 4ull << 30);
  EXPECT_EQ(parse_byte_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(parse_byte_size("100000"), 100000u);
  EXPECT_FALSE(parse_byte_size("lots"));
  EXPECT_FALSE(parse_byte_size("-1G"));
  setenv("GPUSCOPE_MAX_INFLATE", "2G", 1);
  auto limits = InputLimits::from_environment();
  ASSERT_TRUE(limits.ok());
  EXPECT_EQ(limits->max_inflate_bytes, 2ull << 30);
  setenv("GPUSCOPE_MAX_INFLATE", "big", 1);
  auto bad = InputLimits::from_environment();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("GPUSCOPE_MAX_INFLATE=big"), std::string::npos);
  unsetenv("GPUSCOPE_MAX_INFLATE");
  // The default grows with the compressed size and is bounded by memory.
  EXPECT_EQ(inflate_limit(InflateProfile::kCapture, 1 << 20, {}), 256ull << 20);
  EXPECT_GE(inflate_limit(InflateProfile::kJson, 1ull << 30, {}), inflate_limit(InflateProfile::kJson, 1 << 20, {}));
}

}  // namespace
}  // namespace gpuscope
