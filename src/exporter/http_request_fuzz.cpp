// libFuzzer target for what `gpuscope serve` does with the bytes a client sends before a
// handler runs: any byte string, cut into reads of any sizes, must give answers or errors,
// never a crash, hang, sanitizer report or unbounded allocation.
//
// It runs the server's reading state (http_server.cpp) over memory instead of a socket: bytes
// are appended read by read into a buffer bounded like the server's, complete heads are cut
// with find_head_end and parsed with parse_request_head (pipelined requests included), an
// oversized or over-long head ends the connection with 431, as the server does; the
// Authorization value of every request goes through the basic-auth decoding.
//
// Input: the first byte picks the read size (1..256 bytes), the rest is the stream.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "exporter/basic_auth.h"
#include "exporter/http_request.h"

namespace {

constexpr size_t kMaxHeadBytes = 16 * 1024;  // HttpLimits' defaults.
constexpr size_t kMaxHeaderCount = 64;

void check(bool ok) {
  if (!ok) std::abort();
}

void check_request(const gpuscope::exporter::RequestHead& r) {
  check(r.error_status == 0 || r.error_status == 400 || r.error_status == 431 || r.error_status == 505);
  if (r.error_status != 0) return;
  check(r.method.find(' ') == std::string::npos);
  check(r.path.find('?') == std::string::npos && r.path.find(' ') == std::string::npos);
  if (auto creds = gpuscope::exporter::decode_basic_credentials(r.authorization)) {
    check(creds->first.find(':') == std::string::npos);
    check(creds->first.size() + creds->second.size() < r.authorization.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t read_size = 1 + data[0];
  std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string in;
  for (size_t pos = 0; pos < stream.size();) {
    const size_t room = kMaxHeadBytes + 1 - std::min(in.size(), kMaxHeadBytes + 1);
    if (room == 0) return 0;
    const size_t n = std::min({read_size, room, stream.size() - pos});
    in.append(stream.substr(pos, n));
    pos += n;
    while (true) {
      const size_t end = gpuscope::exporter::find_head_end(in);
      if (end == std::string::npos || end > kMaxHeadBytes) break;
      auto head = gpuscope::exporter::parse_request_head(std::string_view(in.data(), end), kMaxHeaderCount);
      check_request(head);
      in.erase(0, end);
      if (head.error_status != 0 || head.has_body || head.close_after) return 0;  // The server closes.
    }
    if (in.size() > kMaxHeadBytes || gpuscope::exporter::count_lines(in) > kMaxHeaderCount + 2) return 0;  // 431.
  }
  return 0;
}
