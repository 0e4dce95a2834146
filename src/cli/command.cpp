// The gpuscope command line, built once from the registry (command.h); main.cpp parses it and
// the help tests (help_format_test.cpp) walk it.
#include "cli/command.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include <fmt/core.h>

#include "cli/help_format.h"

namespace gpuscope::cli {

std::vector<CommandSpec>& command_registry() {
  static std::vector<CommandSpec> registry;
  return registry;
}

namespace {
std::string& invocation_text() {
  static std::string text;
  return text;
}
}  // namespace

void set_invocation(int argc, const char* const* argv) {
  std::string& out = invocation_text();
  out.clear();
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i == 0) arg = arg.substr(arg.rfind('/') + 1);  // "gpuscope", not where it was installed
    const bool plain =
        !arg.empty() &&
        arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@%") ==
            std::string::npos;
    if (!out.empty()) out += ' ';
    if (plain) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
}

const std::string& invocation() { return invocation_text(); }

html::PageOrigin page_origin() {
  char date[64] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &utc);
  return {kVersion, date, invocation()};
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
  cl.app->footer(
      "\nExit codes: 0 success; 2 bad input or usage (one line on stderr says what, where and what "
      "to do); gpuscope run: the traced program's own exit code. Each command's --help says more.");
  cl.app->require_subcommand(1);
  cl.app->set_version_flag("--version", std::string("gpuscope ") + kVersion);

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
