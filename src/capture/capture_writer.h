// Writes a capture file (format in capture_format.h). Used inside the traced process by
// libgpuscope_inject.so (from its writer thread only) and by tests; depends only on zlib and
// POSIX, throws nothing of its own, and never terminates the process.
//
// Contract: not thread-safe; one thread owns a writer. Records are buffered into the current
// chunk; a chunk is written with one write() when it reaches Options::chunk_bytes or on flush(),
// so a reader sees whole chunks or a torn last one. After an I/O error the writer turns itself
// off (failed() true) and drops everything that follows.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "capture/capture_format.h"
#include "core/device_sample.h"

namespace gpuscope::capture {

class CaptureWriter {
 public:
  struct Options {
    bool compress = true;            // zlib level 1: cheap, ~5-10x on activity records.
    size_t chunk_bytes = 256 << 10;  // Raw bytes per chunk before it is written.
  };

  CaptureWriter() = default;
  ~CaptureWriter();
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;

  // Creates `path`, which must not exist (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600: a capture holds
  // command lines), and writes the file header. Never truncates or follows a symlink: an existing
  // file or link at `path` fails with EEXIST. On failure returns false and sets *error to one line
  // naming the path and errno text.
  bool open(const std::string& path, const Options& options, std::string* error);
  // Creates a new capture for process `pid`: `<prefix>.<pid>.gpuscope`, or, when that exists
  // (an exec'd image of the same process, a reused pid, anything planted there),
  // `<prefix>.<pid>-<n>.gpuscope` for the first n from 2 that does not. Sets *path to the file
  // created. Used by the injection library; names are what `gpuscope run` collects.
  bool open_new_for_process(const std::string& prefix, long pid, const Options& options, std::string* path,
                            std::string* error);
  // Opens an existing capture to append chunks (e.g. device samples added after the traced
  // process ended). Does not write a header; records must not use strings of earlier chunks
  // unless they are interned again (interning here starts a new id range above `first_id`).
  // Refuses a symlink (O_NOFOLLOW), anything but a regular file, and a file of another user.
  bool open_append(const std::string& path, const Options& options, std::string* error, uint32_t first_id = 1u << 30);
  // Adopts an already open descriptor (tests); writes the header.
  bool open_fd(int fd, const Options& options, std::string* error);

  // Returns the file's id for `s`, writing a kString record the first time it is seen.
  uint32_t intern(std::string_view s);

  // Appends a record of GPUSCOPE_CAPTURE_RECORDS (capture_format.h), encoded from its table.
  template <typename R>
  requires requires(const R* r) { record_type(r); }
  void add(const R& r) {
    encode_fields(body_, r);
    finish_record(record_type(&r));
  }
  void add(const DeviceSample& r);

  // Writes the pending chunk, if any. Returns false once the writer has failed.
  bool flush();
  // Flushes and closes the descriptor. Safe to call twice.
  void close();

  bool is_open() const { return fd_ >= 0; }
  bool failed() const { return failed_; }
  uint64_t records() const { return records_; }
  uint64_t bytes_written() const { return bytes_written_; }
  const std::string& error() const { return error_; }

 private:
  void finish_record(RecordType type);
  bool write_all(const char* data, size_t bytes);

  int fd_ = -1;
  bool failed_ = false;
  Options options_;
  ByteWriter body_;   // The record being encoded.
  ByteWriter chunk_;  // Raw records of the current chunk.
  std::string compressed_;
  std::unordered_map<std::string, uint32_t> strings_;
  uint32_t first_string_id_ = 1;
  uint64_t records_ = 0;
  uint64_t bytes_written_ = 0;
  std::string error_;
};

}  // namespace gpuscope::capture
