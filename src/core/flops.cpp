#include "core/flops.h"

#include <charconv>
#include <cmath>

#include <fmt/core.h>

namespace gpuscope {

std::optional<double> matmul_flops(const Trace& trace, const HostEvent& op) {
  if (op.kind != HostEventKind::kOp || op.num_matmuls == 0) return std::nullopt;
  double flops = 0;
  for (const Matmul& m : trace.matmuls_of(op)) flops += m.flops();
  return flops;
}

double ModelSpec::flops_per_token() const {
  const double head_dim = heads > 0 ? static_cast<double>(dmodel) / static_cast<double>(heads) : 0.0;
  return 6.0 * params +
         12.0 * static_cast<double>(layers) * static_cast<double>(heads) * head_dim * static_cast<double>(seq);
}

std::string ModelSpec::formula() const {
  return fmt::format(
      "training FLOPs per token = 6N + 12*L*H*Q*T (PaLM appendix B) with N={:.4g}, L={}, H={}, "
      "Q={}, T={} = {:.4g}; x {} tokens per step",
      params, layers, heads, heads > 0 ? dmodel / heads : 0, seq, flops_per_token(), batch * seq);
}

StatusOr<ModelSpec> parse_model_spec(std::string_view spec) {
  const std::string_view kPrefix = "gpt:";
  auto usage = [&](std::string_view what) {
    return Status::error(
        fmt::format("--model '{}': {}; expected e.g. gpt:params=124M,layers=12,heads=12,dmodel=768,seq=1024,"
                    "batch=16",
                    spec, what));
  };
  if (!spec.starts_with(kPrefix)) return usage("only the 'gpt:' family is known");
  ModelSpec m;
  std::string_view rest = spec.substr(kPrefix.size());
  int seen = 0;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return usage(fmt::format("'{}' is not key=value", item));
    const std::string_view key = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    double scale = 1;
    if (!value.empty()) {
      switch (value.back()) {
        case 'K':
        case 'k':
          scale = 1e3;
          break;
        case 'M':
        case 'm':
          scale = 1e6;
          break;
        case 'B':
        case 'G':
        case 'g':
          scale = 1e9;
          break;
        case 'T':
        case 't':
          scale = 1e12;
          break;
        default:
          break;
      }
      if (scale != 1) value.remove_suffix(1);
    }
    double number = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (ec != std::errc() || ptr != value.data() + value.size() || !(number > 0) || !std::isfinite(number)) {
      return usage(fmt::format("'{}' needs a positive number", key));
    }
    number *= scale;
    auto as_int = [&](int64_t& out) { out = static_cast<int64_t>(std::llround(number)); };
    if (key == "params")
      m.params = number, seen |= 1;
    else if (key == "layers")
      as_int(m.layers), seen |= 2;
    else if (key == "heads")
      as_int(m.heads), seen |= 4;
    else if (key == "dmodel")
      as_int(m.dmodel), seen |= 8;
    else if (key == "seq")
      as_int(m.seq), seen |= 16;
    else if (key == "batch")
      as_int(m.batch), seen |= 32;
    else
      return usage(fmt::format("unknown key '{}'", key));
  }
  if (seen != 63) return usage("params, layers, heads, dmodel, seq and batch are all required");
  return m;
}

}  // namespace gpuscope
