// `gpuscope export --perfetto OUT.json FILE...`: gpuscope captures as a Chrome/Perfetto trace
// (kernels by stream, API calls and NVTX by thread, launch->kernel arrows, device samples as
// counter tracks), for ui.perfetto.dev.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/command.h"
#include "formats/capture.h"
#include "formats/perfetto_writer.h"

namespace gpuscope::cli {
namespace {

struct ExportOptions {
  std::string perfetto;
  std::vector<std::string> inputs;
};

int run_export(const ExportOptions& options) {
  std::vector<Trace> traces;
  for (const auto& path : options.inputs) {
    std::ifstream in(path, std::ios::binary);
    char head[16] = {};
    in.read(head, sizeof(head));
    if (!in.gcount()) {
      fmt::print(stderr, "gpuscope export: {}: cannot read the file; check the path\n", path);
      return 2;
    }
    if (!looks_like_capture(std::string_view(head, static_cast<size_t>(in.gcount())))) {
      fmt::print(stderr,
                 "gpuscope export: {}: not a gpuscope capture (bad magic at offset 0); export "
                 "reads files written by `gpuscope run` (PyTorch traces open in Perfetto as they are)\n",
                 path);
      return 2;
    }
    auto trace = read_capture_file(path);
    if (!trace.ok()) {
      fmt::print(stderr, "gpuscope export: {}\n", trace.status().message());
      return 2;
    }
    for (const auto& w : trace->warnings) fmt::print(stderr, "gpuscope export: warning: {}\n", w);
    traces.push_back(std::move(trace).value());
  }
  Status status = write_perfetto_file(traces, options.perfetto);
  if (!status.ok()) {
    fmt::print(stderr, "gpuscope export: {}\n", status.message());
    return 2;
  }
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
      app.add_option("captures", options->inputs, "Capture files written by gpuscope run")->required();
      return [options]() { return run_export(*options); };
    },
});

}  // namespace
}  // namespace gpuscope::cli
