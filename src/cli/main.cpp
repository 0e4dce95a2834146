// gpuscope: entry point. Subcommands register themselves (command.h); this file only builds
// the top-level parser and maps parse errors to exit code 2 with one line on stderr.
#include <algorithm>
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/command.h"

namespace gpuscope::cli {

std::vector<CommandSpec>& command_registry() {
  static std::vector<CommandSpec> registry;
  return registry;
}

}  // namespace gpuscope::cli

int main(int argc, char** argv) {
  using namespace gpuscope::cli;
  CLI::App app{
      "gpuscope: how much real work your GPUs do, where the rest of the time goes, and what to "
      "change.\n\n"
      "GPU 'utilization' only says some kernel was running. gpuscope reports SM activity, "
      "tensor activity and Model FLOPs Utilization (MFU), explains every idle interval, and "
      "recommends fixes with an estimated gain.\n\n"
      "Start with:  gpuscope analyze trace.json.gz        (a PyTorch profiler trace)\n"
      "Then see:    gpuscope COMMAND --help",
      "gpuscope"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpuscope 0.1.0");

  auto& registry = command_registry();
  std::sort(registry.begin(), registry.end(),
            [](const CommandSpec& a, const CommandSpec& b) { return a.order < b.order; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> actions;
  for (const auto& spec : registry) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.description);
    actions.emplace_back(sub, spec.setup(*sub));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "gpuscope: {} (see gpuscope --help)\n", e.what());
    return 2;
  }
  for (auto& [sub, action] : actions) {
    if (sub->parsed()) return action();
  }
  return 2;
}
