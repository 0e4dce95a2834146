// The checks and conversions the commands' options share: one duration parser, one size
// parser (input/input_source.h, parse_byte_size), finite numbers, and CLI11 validators built
// on them, so that a bad value is refused while the command line is parsed (exit 2, one line
// naming the option, the value and what to write instead) and the command's request struct
// only ever holds values that passed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "input/input_source.h"

namespace gpuscope::cli {

// Nanoseconds of "250us", "100ms", "1.5s", "2m" or "1h". A number without a unit is read in
// `bare_unit_ns` (seconds for the live commands' --interval), or refused where it is nullopt,
// except "0", which needs none. nullopt when malformed, negative, not finite, or 100 years or
// more (beyond int64 nanoseconds).
std::optional<int64_t> parse_duration_ns(std::string_view text, std::optional<int64_t> bare_unit_ns);

// A duration option: `option` names it in messages ("--interval"). Accepts what
// parse_duration_ns accepts within [min_ns, max_ns]; 0 also when zero_allowed ("off").
struct DurationRule {
  std::string option;
  std::optional<int64_t> bare_unit_ns;
  int64_t min_ns = 0;
  int64_t max_ns = INT64_MAX;
  bool zero_allowed = true;
  std::string why_min = "the shortest it can be";  // Said when the value is below min_ns.
  std::string examples = "100ms, 2s or 5m";
};
CLI::Validator duration_check(DurationRule rule);

// A size option ("--max-memory"): parse_byte_size, above zero.
CLI::Validator size_check(const std::string& option, std::string_view example);

// A finite number within [lo, hi] (CLI11's PositiveNumber and Range let NaN through, and print
// the largest double as their bound); the message names the option, the range and what the
// number is.
CLI::Validator finite_between(double lo, double hi, const std::string& option, const std::string& what);
// --flops-per-step: model FLOPs per step, from one FLOP to 1e27 (far beyond any job).
CLI::Validator flops_per_step_check();
// --peak-tflops: dense peak TFLOP/s of one GPU, from 0.001 (1 GFLOP/s) to 1e6.
CLI::Validator peak_tflops_check();
// A whole number within [lo, hi] (counts: --threads, --count, --steps).
CLI::Validator count_between(int64_t lo, int64_t hi, const std::string& option);
// One of `names` (--csv, --format, --sort): the message lists them and gives an example.
CLI::Validator one_of(std::vector<std::string> names, const std::string& option, const std::string& example);
// An output file's name (--html FILE): not empty.
CLI::Validator output_name_check();

}  // namespace gpuscope::cli
