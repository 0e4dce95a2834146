#include "cli/help_format.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

namespace gpuscope::cli {
namespace {

// Where a description starts when it cannot sit beside its option name (hanging under it).
constexpr std::string_view kBelow = "      ";

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

bool is_preformatted(std::string_view line) { return line[0] == ' ' || line[0] == '\t'; }

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (true) {
    size_t end = text.find(sep, pos);
    if (end == std::string_view::npos) end = text.size();
    parts.push_back(text.substr(pos, end - pos));
    if (end == text.size()) return parts;
    pos = end + 1;
  }
}

// The widest piece of `text` that wrap_help never breaks: a word of prose or a preformatted line.
size_t widest_unbreakable(std::string_view text) {
  size_t widest = 0;
  for (std::string_view line : split(text, '\n')) {
    if (is_blank(line)) continue;
    if (is_preformatted(line)) {
      widest = std::max(widest, display_width(line));
      continue;
    }
    for (std::string_view word : split(line, ' ')) widest = std::max(widest, display_width(word));
  }
  return widest;
}

}  // namespace

size_t help_width() {
  if (!::isatty(STDOUT_FILENO)) return kMaxHelpWidth;
  struct winsize ws {};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return kMaxHelpWidth;
  return std::clamp<size_t>(ws.ws_col, kMinHelpWidth, kMaxHelpWidth);
}

std::string wrap_help(std::string_view text, size_t width, std::string_view first, std::string_view rest) {
  std::vector<std::string_view> lines = split(text, '\n');
  while (!lines.empty() && is_blank(lines.front())) lines.erase(lines.begin());
  while (!lines.empty() && is_blank(lines.back())) lines.pop_back();

  std::string out;
  bool at_first = true;
  auto prefix = [&] { return at_first ? first : rest; };
  auto emit = [&](std::string_view body) {
    std::string line(prefix());
    line += body;
    line.erase(line.find_last_not_of(' ') + 1);
    out += line;
    out += '\n';
    at_first = false;
  };
  std::string para;  // the prose line being filled
  auto flush = [&] {
    if (!para.empty()) emit(para);
    para.clear();
  };
  for (std::string_view line : lines) {
    if (is_blank(line) || is_preformatted(line)) {
      flush();
      emit(is_blank(line) ? std::string_view() : line);
      continue;
    }
    for (std::string_view word : split(line, ' ')) {
      if (word.empty()) continue;
      if (para.empty()) {
        para = word;
      } else if (display_width(prefix()) + display_width(para) + 1 + display_width(word) <= width) {
        para += ' ';
        para += word;
      } else {
        emit(para);
        para = word;
      }
    }
  }
  flush();
  if (out.empty()) emit("");
  return out == "\n" ? "" : out;
}

size_t HelpFormatter::width() const { return fixed_width_ ? fixed_width_ : help_width(); }

// CLI11's 30 columns at 80; proportionally fewer on a narrow terminal.
size_t HelpFormatter::left_column() const { return std::min(column_width_, width() * 3 / 8); }

std::string HelpFormatter::two_columns(std::string_view name, std::string_view description) const {
  const size_t w = width();
  const size_t column = left_column();
  const std::string pad(column, ' ');
  std::string left = "  " + std::string(name);
  if (description.empty() || is_blank(description)) return wrap_help(name, w, "  ", kBelow);
  if (widest_unbreakable(description) > w - column) {
    return wrap_help(name, w, "  ", kBelow) + wrap_help(description, w, kBelow, kBelow);
  }
  if (display_width(left) < column) {
    left.append(column - display_width(left), ' ');
    return wrap_help(description, w, left, pad);
  }
  return wrap_help(name, w, "  ", kBelow) + wrap_help(description, w, pad, pad);
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
  const std::string description = CLI::Formatter::make_description(app);
  if (description.empty()) return description;
  return wrap_help(description, width(), "", "") + "\n";  // a blank line before "Usage:"
}

std::string HelpFormatter::make_usage(const CLI::App* app, std::string name) const {
  // "Usage: gpuscope run [OPTIONS] [command...]": continuation lines under the command name.
  const std::string usage = CLI::Formatter::make_usage(app, std::move(name));
  const std::string indent(display_width(get_label("Usage")) + 2, ' ');
  return wrap_help(usage, width(), "", indent);
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
  // make_help already puts one empty line before the footer.
  return wrap_help(app->get_footer(), width(), "", "");
}

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
  return two_columns(make_option_name(opt, is_positional) + make_option_opts(opt), make_option_desc(opt));
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  return two_columns(sub->get_display_name(true), sub->get_description());
}

void install_help_formatter(CLI::App& app) {
  auto formatter = std::make_shared<HelpFormatter>();
  std::function<void(CLI::App&)> install = [&](CLI::App& a) {
    a.formatter(formatter);
    for (CLI::App* sub : a.get_subcommands([](CLI::App*) { return true; })) install(*sub);
  };
  install(app);
}

}  // namespace gpuscope::cli
