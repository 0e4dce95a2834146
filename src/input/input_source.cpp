#include "input/input_source.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>
#include <isa-l/igzip_lib.h>

#include "core/run_protocol.h"

namespace gpuscope {
namespace {

constexpr size_t kHeadBytes = 64;
constexpr uint64_t kInflateFloorBytes = 256ull << 20;
constexpr size_t kInflateInputBytes = 256 << 10;

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

uint64_t ratio_of(InflateProfile p) { return p == InflateProfile::kJson ? 100 : 32; }
// Share of physical memory the inflated bytes may reach: 1/1 for streamed JSON, 1/4 for
// captures (their decoded events take about three times the record bytes).
uint64_t memory_divisor(InflateProfile p) { return p == InflateProfile::kJson ? 1 : 4; }

// Waits up to `timeout_s` for `fd` to become readable. 1: readable (or at its end), 0: timed
// out, -1: poll failed (errno set).
int wait_readable(int fd, double timeout_s) {
  pollfd p{fd, POLLIN, 0};
  const int timeout_ms = static_cast<int>(std::min(timeout_s, 86400.0) * 1000);
  int rc = 0;
  do rc = ::poll(&p, 1, timeout_ms);
  while (rc < 0 && errno == EINTR);
  return rc;
}

// Every input is read with read(), never mapped: a mapped file truncated by another process
// while it is read would kill this one with SIGBUS; read() just ends early. The kernel's
// read-ahead keeps sequential reads as fast, and page cache does not count in the resident
// set. Pipes, FIFOs and stdin wait at most the input timeout for each read, not only the first:
// a writer that stalls is an error, not a hang.
class FdSource : public ByteSource {
 public:
  FdSource(int fd, bool owned, double timeout_s) : fd_(fd), owned_(owned), timeout_s_(timeout_s) {}
  ~FdSource() override {
    if (owned_) ::close(fd_);
  }

  static StatusOr<std::unique_ptr<ByteSource>> open(const std::string& path, const InputLimits& limits) {
    int fd = 0;
    bool owned = false;
    if (path == "-") {
      if (isatty(0)) {
        return Status::error("stdin is a terminal: pipe a trace into it (zcat trace.json.gz | gpuscope analyze -)");
      }
    } else {
      // O_NONBLOCK: opening a FIFO for reading would otherwise block until a writer appears.
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0) {
        if (errno == ELOOP) return Status::error("cannot open: a symlink loop (too many levels of symbolic links)");
        return Status::error(fmt::format("cannot open: {}", std::strerror(errno)));
      }
      owned = true;
    }
    auto source = std::make_unique<FdSource>(fd, owned, limits.read_timeout_s);
    struct stat st {};
    if (fstat(fd, &st) != 0) return Status::error(fmt::format("cannot open: {}", std::strerror(errno)));
    if (S_ISDIR(st.st_mode)) return Status::error("is a directory, expected a trace file");
    if (S_ISREG(st.st_mode)) {
      source->size_ = static_cast<uint64_t>(st.st_size);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    } else {
      // A pipe, FIFO, socket or character device: every read waits for data, bounded.
      source->stream_ = true;
      const int rc = wait_readable(fd, limits.read_timeout_s);
      if (rc == 0) {
        return Status::error(
            fmt::format("no data after {:g} s: nothing is writing to this pipe or FIFO; start the writer first "
                        "({}=SECONDS waits longer)",
                        limits.read_timeout_s, run_protocol::kEnvInputTimeout.name));
      }
      if (rc < 0) return Status::error(fmt::format("cannot wait for input: {}", std::strerror(errno)));
    }
    if (owned) {
      const int flags = fcntl(fd, F_GETFL);
      if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    }
    std::string error;
    if (!source->load_head(error)) return Status::error(fmt::format("cannot read: {}", error));
    return std::unique_ptr<ByteSource>(std::move(source));
  }

 protected:
  size_t read_more(char* dst, size_t n, std::string& error) override {
    for (;;) {
      if (stream_) {
        const int rc = wait_readable(fd_, timeout_s_);
        if (rc == 0) {
          error = fmt::format(
              "no data for {:g} s after byte {}: the writer of this pipe or FIFO stalled "
              "({}=SECONDS waits longer)",
              timeout_s_, bytes_read_, run_protocol::kEnvInputTimeout.name);
          return 0;
        }
        if (rc < 0 && errno != EINTR) {
          error = std::strerror(errno);
          return 0;
        }
      }
      const ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) {
        bytes_read_ += static_cast<uint64_t>(got);
        return static_cast<size_t>(got);
      }
      if (errno == EINTR || errno == EAGAIN) continue;  // EAGAIN: stdin set non-blocking by someone else.
      error = std::strerror(errno);
      return 0;
    }
  }

 private:
  int fd_;
  bool owned_;
  double timeout_s_;
  bool stream_ = false;  // Not a regular file: reads wait at most timeout_s_.
  uint64_t bytes_read_ = 0;
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {
    size_ = bytes.size();
    std::string unused;
    load_head(unused);
  }

 protected:
  size_t read_more(char* dst, size_t n, std::string&) override {
    const size_t k = std::min(n, bytes_.size() - pos_);
    std::memcpy(dst, bytes_.data() + pos_, k);
    pos_ += k;
    return k;
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

inflate_state* zs(void* p) { return static_cast<inflate_state*>(p); }

// A new gzip member: ISA-L parses its header and checks its CRC-32 and length itself.
void start_member(inflate_state* s) {
  isal_inflate_init(s);
  s->crc_flag = ISAL_GZIP;
}

}  // namespace

StatusOr<InputLimits> InputLimits::from_environment() {
  InputLimits limits;
  if (const char* v = std::getenv(run_protocol::kEnvMaxInflate.name); v && *v) {
    auto bytes = parse_byte_size(v);
    if (!bytes || *bytes == 0) {
      return Status::error(
          fmt::format("{}={}: expected a size such as 4G or 512M", run_protocol::kEnvMaxInflate.name, v));
    }
    limits.max_inflate_bytes = bytes;
  }
  if (const char* v = std::getenv(run_protocol::kEnvInputTimeout.name); v && *v) {
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    if (end == v || *end != '\0' || !std::isfinite(s) || s <= 0) {
      return Status::error(fmt::format("{}={}: expected seconds, e.g. 120", run_protocol::kEnvInputTimeout.name, v));
    }
    limits.read_timeout_s = s;
  }
  return limits;
}

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  double value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0) return std::nullopt;
  std::string_view unit(p, static_cast<size_t>(text.data() + text.size() - p));
  if (unit.ends_with("iB"))
    unit.remove_suffix(2);
  else if (unit.ends_with("B"))
    unit.remove_suffix(1);
  double scale = 1;
  if (unit == "K" || unit == "k")
    scale = 1024.0;
  else if (unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty())
    return std::nullopt;
  const double bytes = value * scale;
  if (bytes >= 1.8e19) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::string format_bytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1e9) return fmt::format("{:.1f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{} bytes", bytes);
}

uint64_t inflate_limit(InflateProfile profile, uint64_t compressed_bytes, const InputLimits& limits) {
  if (limits.max_inflate_bytes) return *limits.max_inflate_bytes;
  const uint64_t ratio = ratio_of(profile);
  const uint64_t by_ratio = compressed_bytes > UINT64_MAX / ratio ? UINT64_MAX : compressed_bytes * ratio;
  uint64_t limit = std::max(kInflateFloorBytes, by_ratio);
  if (const uint64_t mem = physical_memory_bytes(); mem > 0) {
    limit = std::min(limit, std::max(kInflateFloorBytes / 4, mem / memory_divisor(profile)));
  }
  return limit;
}

std::string inflate_limit_message(InflateProfile profile, uint64_t limit, uint64_t compressed_bytes,
                                  const InputLimits& limits) {
  if (limits.max_inflate_bytes) {
    return fmt::format(
        "decompresses to more than {}, the limit set by --max-inflate or {}; "
        "raise it if the input is genuine",
        format_bytes(limit), run_protocol::kEnvMaxInflate.name);
  }
  return fmt::format(
      "decompresses to more than {} ({}x the {} of compressed input read, at most {} of this machine's "
      "memory): a corrupt file or a compression bomb? If it is genuine, raise the limit with "
      "--max-inflate SIZE or {}=SIZE (e.g. 16G)",
      format_bytes(limit), ratio_of(profile), format_bytes(compressed_bytes),
      memory_divisor(profile) == 1 ? "all" : fmt::format("1/{}", memory_divisor(profile)),
      run_protocol::kEnvMaxInflate.name);
}

StatusOr<std::unique_ptr<ByteSource>> ByteSource::open(const std::string& path, const InputLimits& limits) {
  return FdSource::open(path, limits);
}

std::unique_ptr<ByteSource> ByteSource::memory(std::string_view bytes) { return std::make_unique<MemorySource>(bytes); }

bool ByteSource::load_head(std::string& error) {
  head_.resize(kHeadBytes);
  size_t have = 0;
  while (have < kHeadBytes) {
    const size_t got = read_more(head_.data() + have, kHeadBytes - have, error);
    if (got == 0) break;
    have += got;
  }
  head_.resize(have);
  return error.empty();
}

size_t ByteSource::read(char* dst, size_t n, std::string& error) {
  size_t got = 0;
  if (head_pos_ < head_.size()) {
    got = std::min(n, head_.size() - head_pos_);
    std::memcpy(dst, head_.data() + head_pos_, got);
    head_pos_ += got;
  } else {
    got = read_more(dst, n, error);
  }
  offset_ += got;
  return got;
}

InflateStream::InflateStream(ByteSource& source, InflateProfile profile, const InputLimits& limits)
    : source_(source), profile_(profile), limits_(limits) {}

InflateStream::~InflateStream() { delete zs(stream_); }

// Moves unread input to the front and appends what the source has. False at the end of the
// source (or on an error, with `error` set).
bool InflateStream::refill_input(std::string& error) {
  inflate_state* s = zs(stream_);
  const size_t left = s->avail_in;
  if (left > 0 && s->next_in != in_.data()) std::memmove(in_.data(), s->next_in, left);
  const size_t got = source_.read(reinterpret_cast<char*>(in_.data()) + left, in_.size() - left, error);
  s->next_in = in_.data();
  s->avail_in = static_cast<uint32_t>(left + got);
  return got > 0;
}

// Gzip is undone by ISA-L's igzip: about 3 times zlib's speed on profiler JSON, streaming
// (bench/inflate_bench.cpp).
size_t InflateStream::read(char* dst, size_t n, std::string& error) {
  if (!started_) {
    started_ = true;
    const std::string_view head = source_.head();
    gzip_ =
        head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b;
    if (gzip_) {
      stream_ = new inflate_state{};
      start_member(zs(stream_));
      in_.resize(kInflateInputBytes);
    }
  }
  if (!gzip_) return source_.read(dst, n, error);
  if (ended_ || n == 0) return 0;
  inflate_state* s = zs(stream_);
  n = std::min<size_t>(n, 1u << 30);
  s->next_out = reinterpret_cast<uint8_t*>(dst);
  s->avail_out = static_cast<uint32_t>(n);
  while (s->avail_out == n) {
    if (member_done_) {
      // After a member's trailer: another member, or the end, or bytes that are not gzip.
      if (s->avail_in < 2 && !refill_input(error) && s->avail_in == 0) {
        ended_ = true;
        return 0;
      }
      if (!error.empty()) return 0;
      if (s->avail_in >= 2 && s->next_in[0] == 0x1f && s->next_in[1] == 0x8b) {
        uint8_t* next = s->next_in;
        const uint32_t left = s->avail_in;
        start_member(s);
        s->next_in = next;
        s->avail_in = left;
        s->next_out = reinterpret_cast<uint8_t*>(dst);
        s->avail_out = static_cast<uint32_t>(n);
        member_done_ = false;
        continue;
      }
      uint64_t extra = s->avail_in;
      const uint64_t at = source_.offset() - extra;
      s->avail_in = 0;
      std::string ignored;
      while (refill_input(ignored) && extra < (1ull << 40)) {
        extra += s->avail_in;
        s->avail_in = 0;
      }
      notes_.push_back(fmt::format("ignored {} bytes after the end of the gzip data (compressed byte {})", extra, at));
      ended_ = true;
      return 0;
    }
    if (s->avail_in == 0 && !refill_input(error)) {
      if (error.empty()) error = "unexpected end of the gzip stream";
      ended_ = true;
      return 0;
    }
    const int rc = isal_inflate(s);
    if (rc == ISAL_DECOMP_OK && s->block_state == ISAL_BLOCK_FINISH) {
      member_done_ = true;
    } else if (rc == ISAL_INCORRECT_CHECKSUM) {
      error = fmt::format(
          "corrupt gzip data: the CRC-32 or length in the trailer before compressed byte {} does "
          "not match the data",
          source_.offset() - s->avail_in);
      ended_ = true;
      return 0;
    } else if (rc != ISAL_DECOMP_OK && rc != ISAL_END_INPUT && rc != ISAL_OUT_OVERFLOW) {
      error = fmt::format("corrupt gzip data near compressed byte {}", source_.offset() - s->avail_in);
      ended_ = true;
      return 0;
    }
  }
  const size_t produced = n - s->avail_out;
  inflated_ += produced;
  const uint64_t limit = inflate_limit(profile_, source_.offset(), limits_);
  if (inflated_ > limit) {
    limit_exceeded_ = true;
    error = inflate_limit_message(profile_, limit, source_.offset(), limits_);
    ended_ = true;
    return 0;
  }
  return produced;
}

PrefetchStream::PrefetchStream(InflateStream& in, size_t block_bytes, size_t blocks_ahead)
    : in_(in), block_bytes_(block_bytes), blocks_ahead_(std::max<size_t>(1, blocks_ahead)) {
  thread_ = std::thread([this] { produce(); });
}

PrefetchStream::~PrefetchStream() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void PrefetchStream::produce() {
  for (;;) {
    Block block;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return stop_ || ready_.size() < blocks_ahead_; });
      if (stop_) return;
      if (!free_.empty()) {
        block.bytes = std::move(free_.back());
        free_.pop_back();
      }
    }
    block.bytes.resize(block_bytes_);
    // Fill the block: short reads (a pipe) are gathered so blocks stay large.
    while (block.size < block_bytes_) {
      const size_t got = in_.read(block.bytes.data() + block.size, block_bytes_ - block.size, block.error);
      if (got == 0) break;
      block.size += got;
    }
    block.compressed_offset = in_.compressed_offset();
    const bool last = block.size < block_bytes_;
    {
      std::lock_guard lock(mutex_);
      if (last && block.size > 0) {
        // The data, then an empty block carrying the end (and its error, if any).
        Block end;
        end.error = std::move(block.error);
        block.error.clear();
        end.compressed_offset = block.compressed_offset;
        ready_.push_back(std::move(block));
        ready_.push_back(std::move(end));
      } else {
        ready_.push_back(std::move(block));
      }
    }
    changed_.notify_all();
    if (last) return;
  }
}

size_t PrefetchStream::read(char* dst, size_t n, std::string& error) {
  while (current_pos_ == current_.size) {
    if (ended_) return 0;
    std::unique_lock lock(mutex_);
    if (!current_.bytes.empty()) free_.push_back(std::move(current_.bytes));
    changed_.wait(lock, [this] { return !ready_.empty(); });
    current_ = std::move(ready_.front());
    ready_.pop_front();
    current_pos_ = 0;
    lock.unlock();
    changed_.notify_all();
    compressed_offset_ = current_.compressed_offset;
    if (current_.size == 0) {
      ended_ = true;
      if (!current_.error.empty()) error = current_.error;
      return 0;
    }
  }
  const size_t k = std::min(n, current_.size - current_pos_);
  std::memcpy(dst, current_.bytes.data() + current_pos_, k);
  current_pos_ += k;
  return k;
}

}  // namespace gpuscope
