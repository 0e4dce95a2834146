#include "input/trace_input.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/core.h>

#include "input/capture_reader.h"
#include "input/input_source.h"
#include "input/kineto_reader.h"

namespace gpuscope {
namespace fs = std::filesystem;

namespace {
bool looks_like_trace_name(const std::string& name) {
  return name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".gpuscope");
}

// "No such file" only when that is what happened: a symlink loop or a permission problem
// says so.
std::string status_error(const std::string& path, const std::error_code& ec) {
  if (!ec || ec == std::errc::no_such_file_or_directory) return fmt::format("{}: no such file or directory", path);
  if (ec.value() == ELOOP) return fmt::format("{}: a symlink loop (too many levels of symbolic links)", path);
  return fmt::format("{}: {}", path, ec.message());
}
}  // namespace

StatusOr<std::vector<std::string>> expand_trace_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    if (p == "-") {  // stdin
      out.push_back(p);
      continue;
    }
    std::error_code ec;
    const auto st = fs::status(p, ec);
    if (ec || !fs::exists(st)) return Status::error(status_error(p, ec));
    if (fs::is_directory(st)) {
      std::vector<std::string> found;
      // Every filesystem call takes an error code: an entry that is a symlink loop or a
      // dangling link must never throw. Such an entry with a trace's name is kept, so that
      // reading it fails and says why (the caller skips it with one line); other kinds of
      // files (directories, FIFOs) are left out.
      fs::directory_iterator it(p, ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        const fs::directory_entry& entry = *it;
        if (!looks_like_trace_name(entry.path().filename().string())) continue;
        std::error_code entry_ec;
        const auto entry_st = entry.status(entry_ec);
        if (entry_ec || fs::is_regular_file(entry_st)) found.push_back(entry.path().string());
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
  auto limits = InputLimits::from_environment();
  if (!limits.ok()) return limits.status();
  return read_trace_file(path, limits.value(), progress);
}

StatusOr<Trace> read_trace_file(const std::string& path, const InputLimits& limits,
                                const std::function<void(uint64_t, uint64_t)>& progress) {
  TraceReadOptions options;
  options.limits = limits;
  options.progress = progress;
  return read_trace_file(path, options);
}

StatusOr<Trace> read_trace_file(const std::string& path, const TraceReadOptions& read_options) {
  // Opened once: the first bytes choose the reader and are then read by it, so pipes and stdin
  // work like files.
  auto opened = ByteSource::open(path, read_options.limits);
  if (!opened.ok()) return opened.status();
  return read_trace_source(*opened.value(), path == "-" ? "<stdin>" : path, read_options);
}

StatusOr<Trace> read_trace_source(ByteSource& source, const std::string& name, const TraceReadOptions& read_options) {
  const InputLimits& limits = read_options.limits;
  const auto& progress = read_options.progress;
  if (looks_like_capture(source.head())) {
    // The capture reader's errors start with the name; callers of this function add it.
    auto trace = read_capture_source(source, name, limits);
    if (!trace.ok() && trace.status().message().starts_with(name + ": ")) {
      return Status::error(trace.status().message().substr(name.size() + 2));
    }
    return trace;
  }
  const uint64_t total = source.size().value_or(0);
  KinetoReadOptions options;
  options.limits = limits;
  options.threads = read_options.threads;
  options.events_read = read_options.events_read;
  if (progress) {
    options.progress = [&](uint64_t, uint64_t compressed) { progress(compressed, total); };
  }
  return read_kineto_source(source, name, options);
}

}  // namespace gpuscope
