// --help that fits the screen: CLI11's own Formatter with every piece (description, usage,
// option and subcommand rows, footer) wrapped to 80 columns, or to the terminal when stdout is
// a narrower one. Option names stay in a left column; descriptions wrap with a hanging indent.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "render/text_layout.h"  // display_width

namespace gpuscope::cli {

// The columns help is written for: 80, or the terminal's width when stdout is a terminal
// narrower than that (never below kMinHelpWidth, where two columns stop making sense).
inline constexpr size_t kMaxHelpWidth = 80;
inline constexpr size_t kMinHelpWidth = 40;
size_t help_width();

// Wraps help text to `width` columns. The first output line starts with `first`, every later
// one with `rest` (spaces: a hanging indent). The text reads like a README:
//  - lines that start with a space are preformatted (examples, aligned tables): printed as
//    they are, never joined or broken, even past `width` (shorten them at their source);
//  - an empty line separates paragraphs and is kept;
//  - other lines are prose: consecutive ones are joined and re-wrapped at spaces. A word
//    wider than the room left stays whole on a line of its own.
// Leading and trailing empty lines are dropped; each output line ends in '\n' and carries no
// trailing spaces. Empty text gives `first` alone (trimmed) when `first` has text, else "".
std::string wrap_help(std::string_view text, size_t width, std::string_view first, std::string_view rest);

class HelpFormatter : public CLI::Formatter {
 public:
  // width 0: help_width() each time help is written.
  explicit HelpFormatter(size_t width = 0) : fixed_width_(width) {}

  std::string make_description(const CLI::App* app) const override;
  std::string make_usage(const CLI::App* app, std::string name) const override;
  std::string make_footer(const CLI::App* app) const override;
  std::string make_option(const CLI::Option* opt, bool is_positional) const override;
  std::string make_subcommand(const CLI::App* sub) const override;

  // Two columns: `name` (already indented) on the left, `description` wrapped beside it. A
  // name too wide for the left column gets its own line; a description holding a word or
  // preformatted line too wide for the right column starts below the name, indented less.
  std::string two_columns(std::string_view name, std::string_view description) const;

 private:
  size_t width() const;
  size_t left_column() const;

  size_t fixed_width_;
};

// Installs one HelpFormatter on `app` and, recursively, on every subcommand it has now.
void install_help_formatter(CLI::App& app);

}  // namespace gpuscope::cli
