#include "capture/capture_writer.h"

#include <cerrno>
#include <cstring>
#include <iterator>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

namespace gpuscope::capture {

uint32_t crc32_of(const void* data, size_t bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  while (bytes > 0) {
    uInt n = bytes > (1u << 30) ? (1u << 30) : static_cast<uInt>(bytes);
    crc = crc32(crc, p, n);
    p += n;
    bytes -= n;
  }
  return static_cast<uint32_t>(crc);
}

CaptureWriter::~CaptureWriter() { close(); }

bool CaptureWriter::open(const std::string& path, const Options& options, std::string* error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0600);
  if (fd < 0) {
    const int err = errno;
    if (error) *error = "cannot create capture file " + path + ": " + std::strerror(err);
    errno = err;  // For open_new_for_process.
    return false;
  }
  return open_fd(fd, options, error);
}

bool CaptureWriter::open_new_for_process(const std::string& prefix, long pid, const Options& options, std::string* path,
                                         std::string* error) {
  const std::string base = prefix + "." + std::to_string(pid);
  constexpr int kMaxTries = 1000;
  for (int n = 1; n <= kMaxTries; ++n) {
    std::string candidate = base + (n == 1 ? "" : "-" + std::to_string(n)) + ".gpuscope";
    std::string open_error;
    if (open(candidate, options, &open_error)) {
      if (path) *path = candidate;
      return true;
    }
    // Only an existing name moves on to the next one; any other error is final.
    if (errno != EEXIST || n == kMaxTries) {
      if (error) *error = open_error;
      return false;
    }
  }
  return false;
}

bool CaptureWriter::open_append(const std::string& path, const Options& options, std::string* error,
                                uint32_t first_id) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (error) *error = "cannot append to capture file " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  const char* refused = nullptr;
  if (fstat(fd, &st) != 0)
    refused = "cannot stat it";
  else if (!S_ISREG(st.st_mode))
    refused = "not a regular file";
  else if (st.st_uid != geteuid())
    refused = "owned by another user";
  if (refused) {
    ::close(fd);
    if (error) *error = "not appending to capture file " + path + ": " + refused;
    return false;
  }
  fd_ = fd;
  options_ = options;
  failed_ = false;
  first_string_id_ = first_id;
  return true;
}

bool CaptureWriter::open_fd(int fd, const Options& options, std::string* error) {
  fd_ = fd;
  options_ = options;
  failed_ = false;
  ByteWriter header;
  for (char c : kMagic) header.u8(static_cast<uint8_t>(c));
  header.u32le(kVersion);
  header.u32le(0);
  if (!write_all(header.buffer().data(), header.size())) {
    if (error) *error = error_;
    return false;
  }
  return true;
}

bool CaptureWriter::write_all(const char* data, size_t bytes) {
  while (bytes > 0) {
    ssize_t n = ::write(fd_, data, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = std::string("capture write failed: ") + std::strerror(errno);
      failed_ = true;
      return false;
    }
    data += n;
    bytes -= static_cast<size_t>(n);
    bytes_written_ += static_cast<uint64_t>(n);
  }
  return true;
}

uint32_t CaptureWriter::intern(std::string_view s) {
  auto it = strings_.find(std::string(s));
  if (it != strings_.end()) return it->second;
  // 0 means "no string".
  uint32_t id = first_string_id_ + static_cast<uint32_t>(strings_.size());
  strings_.emplace(std::string(s), id);
  add(StringRecord{id, std::string(s)});
  return id;
}

void CaptureWriter::finish_record(RecordType type) {
  if (failed_ || fd_ < 0) {
    body_.clear();
    return;
  }
  chunk_.u8(static_cast<uint8_t>(type));
  chunk_.varint(body_.size());
  chunk_.buffer().append(body_.buffer());
  body_.clear();
  ++records_;
  if (chunk_.size() >= options_.chunk_bytes) flush();
}

void CaptureWriter::add(const DeviceSample& r) {
  body_.svarint(r.time_ns);
  body_.svarint(r.interval_ns);
  body_.svarint(r.device);
  uint32_t dmask = 0, umask = 0;
  for (size_t i = 0; i < std::size(kSampleDoubleFields); ++i)
    if ((r.*kSampleDoubleFields[i]).has_value()) dmask |= 1u << i;
  for (size_t i = 0; i < std::size(kSampleU64Fields); ++i)
    if ((r.*kSampleU64Fields[i]).has_value()) umask |= 1u << i;
  body_.varint(dmask);
  body_.varint(umask);
  body_.varint(r.gpu_instance_id ? 1 : 0);
  if (r.gpu_instance_id) body_.svarint(*r.gpu_instance_id);
  for (auto field : kSampleDoubleFields)
    if ((r.*field).has_value()) body_.f64(*(r.*field));
  for (auto field : kSampleU64Fields)
    if ((r.*field).has_value()) body_.varint(*(r.*field));
  finish_record(RecordType::kDeviceSample);
}

bool CaptureWriter::flush() {
  if (failed_ || fd_ < 0) return false;
  if (chunk_.size() == 0) return true;
  const std::string& raw = chunk_.buffer();
  const char* payload = raw.data();
  size_t stored = raw.size();
  Codec codec = Codec::kRaw;
  if (options_.compress) {
    uLongf bound = compressBound(static_cast<uLong>(raw.size()));
    compressed_.resize(bound);
    if (compress2(reinterpret_cast<Bytef*>(compressed_.data()), &bound, reinterpret_cast<const Bytef*>(raw.data()),
                  static_cast<uLong>(raw.size()), 1) == Z_OK &&
        bound < raw.size()) {
      payload = compressed_.data();
      stored = bound;
      codec = Codec::kZlib;
    }
  }
  ByteWriter out;
  out.u32le(kChunkMagic);
  out.u32le(static_cast<uint32_t>(stored));
  out.u32le(static_cast<uint32_t>(raw.size()));
  out.u8(static_cast<uint8_t>(codec));
  out.u8(0);
  out.u8(0);
  out.u8(0);
  out.u32le(crc32_of(payload, stored));
  out.u32le(crc32_of(out.buffer().data(), out.size()));
  out.buffer().append(payload, stored);
  chunk_.clear();
  // One write() per chunk: a reader sees whole chunks or a torn last one.
  return write_all(out.buffer().data(), out.size());
}

void CaptureWriter::close() {
  if (fd_ < 0) return;
  flush();
  ::close(fd_);
  fd_ = -1;
}

}  // namespace gpuscope::capture
