// libFuzzer target for the capture reader: any byte string must give a Trace or a Status,
// never a crash, hang, sanitizer report or unbounded allocation.
//
// Two modes, by the first input byte:
// - odd: the bytes after it are the file after a valid file header, as they are (the chunk
//   framing, checksums and resynchronisation get fuzzed);
// - even: the bytes after it are a list of chunk payloads, each `u8 flags | u16le length |
//   payload`, framed here into chunks with correct checksums (flags bit 0: zlib-compress the
//   payload; bit 1: corrupt the payload CRC). Random bytes never pass a CRC-32, so without
//   this mode the record decoders were barely reached (2,374 edges against 7,283).
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "capture/capture_format.h"
#include "core/analysis.h"
#include "input/capture_reader.h"

namespace {

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void add_chunk(std::string& file, std::string_view raw, uint8_t flags) {
  std::string stored(raw);
  uint8_t codec = static_cast<uint8_t>(gpuscope::capture::Codec::kRaw);
  if (flags & 1) {
    uLongf bound = compressBound(static_cast<uLong>(raw.size()));
    stored.resize(bound);
    if (compress2(reinterpret_cast<Bytef*>(stored.data()), &bound, reinterpret_cast<const Bytef*>(raw.data()),
                  static_cast<uLong>(raw.size()), 1) != Z_OK) {
      return;
    }
    stored.resize(bound);
    codec = static_cast<uint8_t>(gpuscope::capture::Codec::kZlib);
  }
  std::string header;
  put_u32(header, gpuscope::capture::kChunkMagic);
  put_u32(header, static_cast<uint32_t>(stored.size()));
  put_u32(header, static_cast<uint32_t>(raw.size()));
  header.push_back(static_cast<char>(codec));
  header.append(3, '\0');
  uint32_t payload_crc = gpuscope::capture::crc32_of(stored.data(), stored.size());
  if (flags & 2) payload_crc ^= 1;
  put_u32(header, payload_crc);
  put_u32(header, gpuscope::capture::crc32_of(header.data(), 20));
  file += header;
  file += stored;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string bytes(gpuscope::capture::kMagic, sizeof(gpuscope::capture::kMagic));
  bytes += std::string("\x01\0\0\0\0\0\0\0", 8);
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    bytes += rest;
  } else {
    while (rest.size() >= 3) {
      const auto flags = static_cast<uint8_t>(rest[0]);
      const size_t len = static_cast<uint8_t>(rest[1]) | (size_t{static_cast<uint8_t>(rest[2])} << 8);
      rest.remove_prefix(3);
      const std::string_view payload = rest.substr(0, len);
      rest.remove_prefix(payload.size());
      add_chunk(bytes, payload, flags);
    }
  }
  auto trace = gpuscope::read_capture_bytes(bytes, "fuzz");
  if (trace.ok()) {
    // What the reader hands over must be safe to analyse (the time contract of event_time.h).
    auto report = gpuscope::analyze_trace(trace.value(), {});
    (void)report;
  }
  return 0;
}
