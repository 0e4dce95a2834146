#include "formats/trace_input.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/core.h>

#include "formats/capture.h"
#include "formats/kineto_reader.h"

namespace gpuscope {
namespace fs = std::filesystem;

namespace {
bool looks_like_trace_name(const std::string& name) {
  return name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".gpuscope");
}
}  // namespace

StatusOr<std::vector<std::string>> expand_trace_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    const auto st = fs::status(p, ec);
    if (ec || !fs::exists(st)) return Status::error(fmt::format("{}: no such file or directory", p));
    if (fs::is_directory(st)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(p, ec)) {
        if (entry.is_regular_file() && looks_like_trace_name(entry.path().filename().string())) {
          found.push_back(entry.path().string());
        }
      }
      if (ec) return Status::error(fmt::format("{}: cannot list directory: {}", p, ec.message()));
      if (found.empty()) {
        return Status::error(fmt::format("{}: directory holds no traces (*.json, *.json.gz, *.gpuscope)", p));
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else {
      out.push_back(p);
    }
  }
  return out;
}

StatusOr<Trace> read_trace_file(const std::string& path, const std::function<void(uint64_t, uint64_t)>& progress) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Status::error("is a directory, expected a trace file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(fmt::format("cannot open: {}", std::strerror(errno)));
  char head[64] = {};
  f.read(head, sizeof head);
  const std::string_view first(head, static_cast<size_t>(f.gcount()));
  f.close();
  if (looks_like_capture(first)) return read_capture_file(path);
  const uint64_t total = fs::file_size(path, ec);
  KinetoReadOptions options;
  if (progress) {
    options.progress = [&](uint64_t, uint64_t compressed) { progress(compressed, ec ? 0 : total); };
  }
  return read_kineto_file(path, options);
}

}  // namespace gpuscope
