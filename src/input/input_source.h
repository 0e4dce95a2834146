// Bytes in, for every reader: a file, a pipe (`<(zcat trace.json.gz)`), a FIFO or stdin ("-"),
// opened once. The first bytes are read ahead so a reader can be chosen by them (`head()`)
// and are then handed to that reader, never read twice, so streams that cannot be reopened
// work like files. Gzip is undone here, within a budget.
//
// Limits (what a hostile or broken input can cost):
// - Total inflated bytes: at most `ratio` times the compressed bytes read so far, or a floor
//   (256 MiB), whichever is larger, and never more than a share of physical memory. A
//   6 MB file cannot expand to gigabytes. `--max-inflate SIZE` or GPUSCOPE_MAX_INFLATE=SIZE
//   replaces the computed limit; the error names both.
// - Waiting: a pipe or FIFO that yields no byte for 30 s (GPUSCOPE_INPUT_TIMEOUT=S), at the
//   start or at any later point, is an error naming the likely cause (no writer, or a writer
//   that stalled), not a hang.
// - A regular file is read, never memory-mapped: one truncated while it is read ends early
//   (a truncated trace) instead of killing the process with SIGBUS.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/status.h"

namespace gpuscope {

struct InputLimits {
  // Replaces the computed inflate limit (bytes) when set: from --max-inflate or
  // GPUSCOPE_MAX_INFLATE. Also raises the limit on a single JSON value.
  std::optional<uint64_t> max_inflate_bytes;
  // Seconds to wait for each read of a pipe, FIFO or stdin (the first byte and every later one).
  double read_timeout_s = 30;

  // Defaults with GPUSCOPE_MAX_INFLATE and GPUSCOPE_INPUT_TIMEOUT applied. A malformed value
  // is an error naming the variable.
  static StatusOr<InputLimits> from_environment();
};

// "512M", "4G", "1.5GiB", "100000" (bytes; K/M/G/T are powers of 1024). nullopt if malformed.
std::optional<uint64_t> parse_byte_size(std::string_view text);
// "1.2 GB"-style text for messages.
std::string format_bytes(uint64_t bytes);

// Which kind of content is being inflated: sets the default ratio and memory share.
enum class InflateProfile {
  kJson,     // Streamed: memory holds events, about a tenth of the text. Ratio 100.
  kCapture,  // Decoded records take about 3x their bytes in memory. Ratio 32.
};

// The inflate limit for `compressed_bytes` read so far.
uint64_t inflate_limit(InflateProfile profile, uint64_t compressed_bytes, const InputLimits& limits);
// The one-line message for an input that went past it.
std::string inflate_limit_message(InflateProfile profile, uint64_t limit, uint64_t compressed_bytes,
                                  const InputLimits& limits);

// An opened input. Not thread-safe; one reader at a time.
class ByteSource {
 public:
  // Opens `path` ("-" for stdin). Errors are one line without the path (callers add it):
  // missing, symlink loop, a directory, a terminal on stdin, a pipe with no writer.
  static StatusOr<std::unique_ptr<ByteSource>> open(const std::string& path, const InputLimits& limits = {});
  // Bytes already in memory (tests, fuzzers); not copied, must outlive the source.
  static std::unique_ptr<ByteSource> memory(std::string_view bytes);

  virtual ~ByteSource() = default;
  // The first bytes of the input (up to 64; fewer only for a shorter input), to choose a
  // reader by. Reading does not consume them from here; `read` still returns them first.
  std::string_view head() const { return head_; }
  // Reads up to n bytes; 0 at the end. On a read error returns 0 and sets `error`.
  size_t read(char* dst, size_t n, std::string& error);
  // Bytes consumed so far (the compressed offset for gzip).
  uint64_t offset() const { return offset_; }
  // Size of a regular file; nullopt for pipes and stdin.
  std::optional<uint64_t> size() const { return size_; }

 protected:
  virtual size_t read_more(char* dst, size_t n, std::string& error) = 0;
  // Reads the first bytes into head_; false with `error` set on a read error.
  bool load_head(std::string& error);

  std::string head_;
  size_t head_pos_ = 0;
  uint64_t offset_ = 0;
  std::optional<uint64_t> size_;
};

// Plain or gzip (by the magic bytes at the start; concatenated members read as one stream)
// from a ByteSource, within the inflate limit. Plain input passes through uncounted.
class InflateStream {
 public:
  InflateStream(ByteSource& source, InflateProfile profile, const InputLimits& limits);
  ~InflateStream();
  InflateStream(const InflateStream&) = delete;
  InflateStream& operator=(const InflateStream&) = delete;

  // Reads up to n bytes; 0 at the end or on an error. `error` is set on corrupt or unreadable
  // input; `limit_exceeded()` tells the inflate limit apart (then `error` is its message).
  size_t read(char* dst, size_t n, std::string& error);
  bool limit_exceeded() const { return limit_exceeded_; }
  bool gzip() const { return gzip_; }
  uint64_t compressed_offset() const { return source_.offset(); }
  uint64_t inflated() const { return inflated_; }
  // After reading to the end: notes on a well-formed-enough stream (a gzip without its
  // trailer, bytes after the last gzip member).
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  bool refill_input(std::string& error);

  ByteSource& source_;
  InflateProfile profile_;
  InputLimits limits_;
  bool gzip_ = false;
  bool started_ = false;
  bool member_done_ = false;  // Between gzip members (after a trailer).
  bool ended_ = false;
  bool limit_exceeded_ = false;
  void* stream_ = nullptr;  // ISA-L inflate_state
  std::vector<unsigned char> in_;
  uint64_t inflated_ = 0;
  std::vector<std::string> notes_;
};

// An InflateStream read ahead by a thread of its own: the next blocks are inflated while the
// reader parses the last one. Same contract as InflateStream's read for one
// consumer; `limit_exceeded` and `notes` are final once read has returned 0. Memory: at most
// `blocks_ahead` + 1 blocks.
class PrefetchStream {
 public:
  explicit PrefetchStream(InflateStream& in, size_t block_bytes = 4 << 20, size_t blocks_ahead = 2);
  ~PrefetchStream();
  PrefetchStream(const PrefetchStream&) = delete;
  PrefetchStream& operator=(const PrefetchStream&) = delete;

  size_t read(char* dst, size_t n, std::string& error);
  bool limit_exceeded() const { return ended_ && in_.limit_exceeded(); }
  // Compressed bytes consumed by the inflater when the block being read was made.
  uint64_t compressed_offset() const { return compressed_offset_; }
  const std::vector<std::string>& notes() const { return in_.notes(); }

 private:
  struct Block {
    std::vector<char> bytes;
    size_t size = 0;
    uint64_t compressed_offset = 0;
    std::string error;  // Set on the last block (size 0) when the stream failed.
  };
  void produce();

  InflateStream& in_;
  const size_t block_bytes_;
  const size_t blocks_ahead_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Block> ready_;
  std::vector<std::vector<char>> free_;
  bool stop_ = false;
  Block current_;
  size_t current_pos_ = 0;
  bool ended_ = false;
  uint64_t compressed_offset_ = 0;
  std::thread thread_;
};

}  // namespace gpuscope
