// The gpuscope command line, built once from the registry (command.h); main.cpp parses it and
// the help tests (help_format_test.cpp) walk it.
#include "cli/command.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "cli/help_format.h"

namespace gpuscope::cli {

std::vector<CommandSpec>& command_registry() {
  static std::vector<CommandSpec> registry;
  return registry;
}

CLI::Validator finite_between(double lo, double hi, const std::string& what) {
  return CLI::Validator(
      [lo, hi, what](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value) || value < lo || value > hi) {
          return fmt::format("'{}' is not {}: expected a number from {:g} to {:g}", text, what, lo, hi);
        }
        return {};
      },
      "POSITIVE");
}

CLI::Validator flops_per_step_check() { return finite_between(1, 1e27, "a count of FLOPs per step"); }
CLI::Validator peak_tflops_check() { return finite_between(1e-3, 1e6, "a peak in TFLOP/s"); }

CLI::Validator output_name_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string { return text.empty() ? "name a file to write to" : ""; }, "");
}

CommandLine build_command_line() {
  CommandLine cl;
  cl.app = std::make_unique<CLI::App>(
      "gpuscope: how much real work your GPUs do, where the rest of the time goes, and what to "
      "change.\n\n"
      "GPU 'utilization' only says some kernel was running. gpuscope reports SM activity, "
      "tensor activity and Model FLOPs Utilization (MFU), explains every idle interval, and "
      "recommends fixes with an estimated gain.\n\n"
      "Start with:\n"
      "  gpuscope analyze trace.json.gz     # a PyTorch profiler trace\n"
      "  gpuscope COMMAND --help            # a command's options and examples",
      "gpuscope");
  cl.app->require_subcommand(1);
  cl.app->set_version_flag("--version", "gpuscope " GPUSCOPE_VERSION);  // CMake's project version

  auto& registry = command_registry();
  std::stable_sort(registry.begin(), registry.end(),
                   [](const CommandSpec& a, const CommandSpec& b) { return a.order < b.order; });
  for (const auto& spec : registry) {
    CLI::App* sub = cl.app->add_subcommand(spec.name, spec.description);
    cl.actions.emplace_back(sub, spec.setup(*sub));
  }
  // After the subcommands exist, so that any of them (and theirs) made with their own
  // formatter get this one too.
  install_help_formatter(*cl.app);
  return cl;
}

}  // namespace gpuscope::cli
