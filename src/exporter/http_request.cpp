#include "exporter/http_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>

namespace gpuscope::exporter {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

size_t find_head_end(std::string_view in) {
  size_t crlf = in.find("\r\n\r\n");
  size_t lf = in.find("\n\n");
  size_t a = crlf == std::string_view::npos ? crlf : crlf + 4;
  size_t b = lf == std::string_view::npos ? lf : lf + 2;
  return std::min(a, b);
}

size_t count_lines(std::string_view s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

RequestHead parse_request_head(std::string_view head, size_t max_header_count) {
  RequestHead r;
  if (count_lines(head) > max_header_count + 2) {
    r.error_status = 431;
    return r;
  }
  size_t eol = head.find('\n');
  std::string_view line = trim(head.substr(0, eol));
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) {
    r.error_status = 400;
    return r;
  }
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (version.rfind("HTTP/1.", 0) != 0) {
    r.error_status = version.rfind("HTTP/", 0) == 0 ? 505 : 400;
    return r;
  }
  r.close_after = version == "HTTP/1.0";
  for (size_t pos = eol == std::string_view::npos ? head.size() : eol + 1; pos < head.size();) {
    size_t next = head.find('\n', pos);
    std::string_view h = head.substr(pos, next - pos);
    pos = next == std::string_view::npos ? head.size() : next + 1;
    size_t colon = h.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = trim(h.substr(0, colon));
    std::string_view value = trim(h.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      uint64_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size()) {
        r.error_status = 400;
        return r;
      }
      r.has_body |= n > 0;
    } else if (iequals(name, "Transfer-Encoding")) {
      r.has_body = true;
    } else if (iequals(name, "Connection")) {
      if (iequals(value, "close"))
        r.close_after = true;
      else if (iequals(value, "keep-alive"))
        r.close_after = false;
    } else if (iequals(name, "Authorization")) {
      r.authorization = std::string(value);
    }
  }
  r.method = std::string(line.substr(0, sp1));
  r.path = std::string(target.substr(0, target.find('?')));
  return r;
}

}  // namespace gpuscope::exporter
