// `gpuscope export --perfetto OUT.json FILE...`: gpuscope captures as a Chrome/Perfetto trace
// (kernels by stream, API calls and NVTX by thread, launch->kernel arrows, device samples as
// counter tracks), for ui.perfetto.dev.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/command.h"
#include "formats/capture.h"
#include "formats/input_source.h"
#include "formats/perfetto_writer.h"

namespace gpuscope::cli {
namespace {

struct ExportOptions {
  std::string perfetto;
  std::string max_inflate;
  std::vector<std::string> inputs;
};

int run_export(const ExportOptions& options) {
  auto limits = InputLimits::from_environment();
  if (!limits.ok()) {
    fmt::print(stderr, "gpuscope export: {}\n", limits.status().message());
    return 2;
  }
  if (!options.max_inflate.empty()) {
    auto bytes = parse_byte_size(options.max_inflate);
    if (!bytes || *bytes == 0) {
      fmt::print(stderr, "gpuscope export: --max-inflate {}: expected a size such as 16G or 512M\n",
                 options.max_inflate);
      return 2;
    }
    limits->max_inflate_bytes = bytes;
  }
  std::vector<Trace> traces;
  for (const auto& path : options.inputs) {
    // Opened once (pipes and "-" for stdin work): the magic is checked on the bytes the
    // reader then decodes.
    auto source = ByteSource::open(path, limits.value());
    if (!source.ok()) {
      fmt::print(stderr, "gpuscope export: {}: {}; check the path\n", path, source.status().message());
      return 2;
    }
    if (source.value()->head().empty()) {
      fmt::print(stderr, "gpuscope export: {}: the file is empty; export reads files written by `gpuscope run`\n",
                 path);
      return 2;
    }
    if (!looks_like_capture(source.value()->head())) {
      fmt::print(stderr,
                 "gpuscope export: {}: not a gpuscope capture (bad magic at offset 0); export "
                 "reads files written by `gpuscope run` (PyTorch traces open in Perfetto as they are)\n",
                 path);
      return 2;
    }
    auto trace = read_capture_source(*source.value(), path == "-" ? "<stdin>" : path, limits.value());
    if (!trace.ok()) {
      fmt::print(stderr, "gpuscope export: {}\n", trace.status().message());
      return 2;
    }
    for (const auto& w : trace->warnings) fmt::print(stderr, "gpuscope export: warning: {}: {}\n", trace->source, w);
    traces.push_back(std::move(trace).value());
  }
  std::vector<std::string> warnings;
  Status status = write_perfetto_file(traces, options.perfetto, &warnings);
  if (!status.ok()) {
    fmt::print(stderr, "gpuscope export: {}\n", status.message());
    return 2;
  }
  for (const auto& w : warnings) fmt::print(stderr, "gpuscope export: warning: {}\n", w);
  if (options.perfetto != "-")
    fmt::print(stderr, "gpuscope export: wrote {} (open it in https://ui.perfetto.dev)\n", options.perfetto);
  return 0;
}

CommandRegistration kExport({
    "export",
    "Write captures as a Chrome/Perfetto trace for ui.perfetto.dev",
    60,
    [](CLI::App& app) -> std::function<int()> {
      auto options = std::make_shared<ExportOptions>();
      app.add_option("--perfetto", options->perfetto, "Output JSON file ('-' for stdout)")->required();
      app.add_option("captures", options->inputs, "Capture files written by gpuscope run ('-' for stdin)")->required();
      app.add_option("--max-inflate", options->max_inflate,
                     "Most bytes the captures' compressed chunks may expand to, e.g. 16G (default: 32x the file "
                     "size, at least 256M, bounded by memory; env GPUSCOPE_MAX_INFLATE)");
      return [options]() { return run_export(*options); };
    },
});

}  // namespace
}  // namespace gpuscope::cli
