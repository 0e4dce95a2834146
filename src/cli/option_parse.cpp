#include "cli/option_parse.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/core.h>

#include "core/text.h"  // terminal_safe

namespace gpuscope::cli {
namespace {

// 2^63 ns is 292 years; 100 years keeps every conversion to int64 defined.
constexpr double kLongestNs = 100 * 365.25 * 86400e9;

// "100ms", "2s" or "5m" for a bound in messages.
std::string bound_text(int64_t ns) {
  if (ns % 3'600'000'000'000 == 0) return fmt::format("{}h", ns / 3'600'000'000'000);
  if (ns % 60'000'000'000 == 0) return fmt::format("{}m", ns / 60'000'000'000);
  if (ns % 1'000'000'000 == 0) return fmt::format("{}s", ns / 1'000'000'000);
  if (ns % 1'000'000 == 0) return fmt::format("{}ms", ns / 1'000'000);
  return fmt::format("{}us", ns / 1000);
}

// Nanoseconds of `text` as a double (possibly beyond int64); nullopt when malformed.
std::optional<double> duration_ns_unbounded(std::string_view text, std::optional<int64_t> bare_unit_ns) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0) return std::nullopt;
  const std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
  double scale = 0;
  if (unit.empty())
    scale = value == 0 ? 1 : bare_unit_ns ? static_cast<double>(*bare_unit_ns) : 0;
  else if (unit == "us")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else if (unit == "m")
    scale = 60e9;
  else if (unit == "h")
    scale = 3600e9;
  if (scale == 0) return std::nullopt;
  return value * scale;
}

}  // namespace

std::optional<int64_t> parse_duration_ns(std::string_view text, std::optional<int64_t> bare_unit_ns) {
  const std::optional<double> ns = duration_ns_unbounded(text, bare_unit_ns);
  if (!ns || *ns >= kLongestNs) return std::nullopt;
  return static_cast<int64_t>(std::llround(*ns));
}

CLI::Validator duration_check(DurationRule rule) {
  return CLI::Validator(
      [rule](std::string& text) -> std::string {
        const std::string shown = fmt::format("{} {}", rule.option, terminal_safe(text));
        const std::optional<double> ns = duration_ns_unbounded(text, rule.bare_unit_ns);
        if (!ns) {
          return fmt::format("{}: not a duration{}; write e.g. {}", shown, rule.bare_unit_ns ? "" : " with its unit",
                             rule.examples);
        }
        if (*ns == 0 && rule.zero_allowed) return {};
        if (*ns < static_cast<double>(rule.min_ns)) {
          return fmt::format("{}: below {}, {}; write {} or more{}", shown, bound_text(rule.min_ns), rule.why_min,
                             bound_text(rule.min_ns), rule.zero_allowed ? " (0: off)" : "");
        }
        if (*ns > static_cast<double>(rule.max_ns) || *ns >= kLongestNs) {
          return fmt::format("{}: too long (at most {}); write e.g. {}", shown, bound_text(rule.max_ns), rule.examples);
        }
        return {};
      },
      "");
}

CLI::Validator size_check(const std::string& option, std::string_view example) {
  return CLI::Validator(
      [option, example = std::string(example)](std::string& text) -> std::string {
        const auto bytes = parse_byte_size(text);
        if (bytes && *bytes > 0) return {};
        return fmt::format("{} {}: not a size; write e.g. {} or 512M (K, M, G, T: powers of 1024)", option,
                           terminal_safe(text), example);
      },
      "");
}

CLI::Validator finite_between(double lo, double hi, const std::string& option, const std::string& what) {
  return CLI::Validator(
      [lo, hi, option, what](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value) || value < lo || value > hi) {
          return fmt::format("{} {}: not {}: expected a number from {:g} to {:g}", option, terminal_safe(text), what,
                             lo, hi);
        }
        return {};
      },
      "");
}

CLI::Validator flops_per_step_check() {
  return finite_between(1, 1e27, "--flops-per-step", "a count of FLOPs per step");
}
CLI::Validator peak_tflops_check() { return finite_between(1e-3, 1e6, "--peak-tflops", "a peak in TFLOP/s"); }

CLI::Validator count_between(int64_t lo, int64_t hi, const std::string& option) {
  return CLI::Validator(
      [lo, hi, option](std::string& text) -> std::string {
        int64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size() || value < lo || value > hi) {
          return fmt::format("{} {}: expected a whole number from {} to {}", option, terminal_safe(text), lo, hi);
        }
        return {};
      },
      "");
}

CLI::Validator one_of(std::vector<std::string> names, const std::string& option, const std::string& example) {
  std::string list, braced;
  for (size_t i = 0; i < names.size(); ++i) {
    list += i == 0 ? "" : i + 1 == names.size() ? " or " : ", ";
    list += names[i];
    braced += (i == 0 ? "{" : ",") + names[i];
  }
  braced += "}";
  return CLI::Validator(
      [names, option, example, list](std::string& text) -> std::string {
        if (std::find(names.begin(), names.end(), text) != names.end()) return {};
        return fmt::format("{} {}: expected {} (e.g. {})", option, terminal_safe(text), list, example);
      },
      braced);
}

CLI::Validator output_name_check() {
  return CLI::Validator([](std::string& text) -> std::string { return text.empty() ? "name a file to write to" : ""; },
                        "");
}

}  // namespace gpuscope::cli
