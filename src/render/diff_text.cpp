#include "render/diff_text.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "render/text_layout.h"

namespace gpuscope {
namespace {

// Green when the change is an improvement, red when it is a regression; plain when it shows
// as zero at the 2 decimals written (+0.00 is no change to the reader).
std::string good_bad(const Painter& p, std::string_view t, double change, bool higher_is_better) {
  if (std::abs(change) < 0.005) return std::string(t);
  return (change > 0) == higher_is_better ? p.green(t) : p.red(t);
}

// Rows below this many ms per step on both sides are left out of the tables.
constexpr double kShownMs = 0.005;

std::string ratio_text(std::optional<double> r) { return r ? fmt::format("x{:.2f}", *r) : std::string("-"); }

// "  label  BASE  NEW  change  ratio": 2 + lw + 11 + 11 + 12 + 9 columns, 67 with the label
// column `lw` at its widest (22); narrower screens get a narrower label column.
size_t label_width(size_t width) { return std::clamp<size_t>(width > 45 ? width - 45 : 0, 13, 22); }

std::string row(size_t lw, std::string_view label, std::string_view base, std::string_view now, std::string_view change,
                std::string_view ratio) {
  return fmt::format("  {:<{}}{:>11}{:>11}{}{}\n", clip(label, lw - 1), lw, base, now, change, ratio);
}

std::string pct_row(const Painter& p, size_t lw, std::string_view label, const ValueChange& v,
                    bool higher_is_better = true) {
  if (!v.base && !v.now) return "";
  auto side = [](const std::optional<double>& x) { return x ? fmt::format("{:.1f}%", *x) : std::string("n/a"); };
  const auto delta = v.delta();
  const std::string change = delta ? fmt::format("{:>12}", fmt::format("{:+.1f} pts", *delta)) : std::string(12, ' ');
  return row(lw, label, side(v.base), side(v.now), delta ? good_bad(p, change, *delta, higher_is_better) : change,
             v.ratio() ? fmt::format("{:>9}", ratio_text(v.ratio())) : "");
}

std::string ms_row(const Painter& p, size_t lw, std::string_view label, double base, double now,
                   std::optional<double> ratio) {
  const double delta = now - base;
  const std::string change = fmt::format("{:>12}", fmt::format("{:+.2f}", delta));
  return row(lw, label, fmt::format("{:.2f}", base), fmt::format("{:.2f}", now),
             std::abs(delta) < kShownMs ? change : good_bad(p, change, delta, false),
             fmt::format("{:>9}", ratio_text(ratio)));
}

void component_table(std::string& out, const Painter& p, size_t lw, std::string_view title,
                     const std::vector<ComponentChange>& rows) {
  std::string body;
  for (const auto& c : rows) {
    if (std::max(c.base_ms, c.new_ms) < kShownMs) continue;
    body += ms_row(p, lw, c.name, c.base_ms, c.new_ms, c.ratio());
  }
  if (body.empty()) return;
  out += "\n" + heading(p, title, "  (ms per step)", 200);
  out += p.dim(row(lw, "", "BASE", "NEW", fmt::format("{:>12}", "change"), fmt::format("{:>9}", "ratio")));
  out += body;
}

std::string describe(const HeadlineChange& h) {
  const ComponentChange& c = h.component;
  switch (c.kind) {
    case ComponentKind::kIdle:
      return fmt::format("{} idle", c.name);
    case ComponentKind::kCategory: {
      std::string s = fmt::format("{} kernel time", c.name);
      const bool memory_bound = c.name == "elementwise" || c.name == "reduction_norm";
      // Fewer launches doing the same memory-bound work: kernels were fused.
      if (memory_bound && c.delta_ms() < 0 && c.base_launches && c.new_launches &&
          *c.new_launches < 0.8 * *c.base_launches) {
        s += fmt::format(" (fusion: {:.0f} -> {:.0f} launches per step)", *c.base_launches, *c.new_launches);
      }
      return s;
    }
    case ComponentKind::kPrecision:
      if (!h.base_dominant_dtype.empty() && !h.new_dominant_dtype.empty() &&
          h.base_dominant_dtype != h.new_dominant_dtype) {
        return fmt::format("precision {} -> {} ({} matrix math time)", h.base_dominant_dtype, h.new_dominant_dtype,
                           c.name);
      }
      return fmt::format("{} matrix math time", c.name);
  }
  return c.name;
}

std::string speedup_text(const FindingChange& f, bool base) {
  const auto& sev = base ? f.base_severity : f.new_severity;
  const auto& sp = base ? f.base_est_speedup : f.new_est_speedup;
  if (!sev) return "-";
  return sp ? fmt::format("x{:.2f}", *sp) : std::string("n/a");
}

void render_device(std::string& out, const DeviceDiff& d, const Painter& p, int width) {
  const size_t w = static_cast<size_t>(width);
  const size_t lw = label_width(w);
  std::string title =
      terminal_safe(d.base_device == d.new_device ? d.new_device : d.base_device + " -> " + d.new_device);
  if (d.rank) title += fmt::format(" · rank {}", *d.rank);
  out += p.bold("gpuscope diff · " + title) + "\n";
  auto side = [&](std::string_view tag, const std::string& source, int64_t steps, const std::string& step_source) {
    const std::string tail = fmt::format(" · {} step{} ({})", steps, steps == 1 ? "" : "s", step_source);
    out +=
        p.dim(fmt::format("  {:<5}", tag) + elide_path(source, w > 8 + tail.size() ? w - 8 - tail.size() : 8) + tail) +
        "\n";
  };
  side("BASE", d.base_source, d.base_steps, d.base_step_source);
  side("NEW", d.new_source, d.new_steps, d.new_step_source);
  for (const auto& warning : d.warnings) out += p.yellow(wrap_text("warning: " + warning, w, "  "));

  out += "\n" + p.bold("The change that made the difference") + "\n";
  const double step_delta = d.step_ms.delta().value_or(0);
  const std::string faster = d.step_time_ratio > 0 && d.step_time_ratio < 1
                                 ? fmt::format("{:.2f}x faster", 1.0 / d.step_time_ratio)
                             : d.step_time_ratio > 1 ? fmt::format("{:.2f}x slower", d.step_time_ratio)
                                                     : "unchanged";
  if (d.headline) {
    const auto& h = *d.headline;
    std::string line = fmt::format("{}: {:.2f} -> {:.2f} ms per step ({:+.2f} ms)", describe(h), h.component.base_ms,
                                   h.component.new_ms, h.component.delta_ms());
    if (h.share_of_step_change && *h.share_of_step_change > 0) {
      line += fmt::format(", {:.0f}% of the step-time change", 100.0 * *h.share_of_step_change);
    }
    out += p.cyan(wrap_text(line, w, "  "));
  } else {
    out += wrap_text("none: no idle cause, kernel category or precision changed its time per step", w, "  ");
  }
  out += wrap_text(fmt::format("measured step time x{:.4f}: {:.2f} -> {:.2f} ms ({})", d.step_time_ratio,
                               d.step_ms.base.value_or(0), d.step_ms.now.value_or(0), faster),
                   w, "  ");

  out += "\n" + p.dim(row(lw, "", "BASE", "NEW", fmt::format("{:>12}", "change"), fmt::format("{:>9}", "ratio")));
  const std::string step_change = fmt::format("{:>12}", fmt::format("{:+.2f} ms", step_delta));
  out += row(lw, "Step time", fmt::format("{:.2f} ms", d.step_ms.base.value_or(0)),
             fmt::format("{:.2f} ms", d.step_ms.now.value_or(0)), good_bad(p, step_change, step_delta, false),
             fmt::format("{:>9}", ratio_text(d.step_time_ratio)));
  const std::string basis = d.throughput_basis == "model_flops"    ? "model FLOPs/s"
                            : d.throughput_basis == "matmul_flops" ? "matmul FLOPs/s"
                                                                   : "steps/s, same work assumed";
  // The basis where the BASE, NEW and change columns are (34 columns).
  out += fmt::format("  {:<{}}{}{:>9}\n", "Throughput", lw, p.dim(fmt::format("{:>34}", cut(basis, 33))),
                     ratio_text(d.throughput_ratio));
  out += pct_row(p, lw, "MFU", d.mfu_pct);
  out += pct_row(p, lw, "HFU (matmul)", d.hfu_pct);
  out += pct_row(p, lw, "Utilization (busy)", d.busy_pct);
  out += pct_row(p, lw, "SM active (estimate)", d.sm_active_est_pct);
  out += pct_row(p, lw, "SM active (hw)", d.hw_sm_active_pct);
  out += pct_row(p, lw, "Tensor active (hw)", d.hw_tensor_active_pct);
  out += pct_row(p, lw, "Idle", d.idle_pct, false);
  if (d.kernels_per_step.base && d.kernels_per_step.now) {
    out += row(lw, "Kernels per step", fmt::format("{:.0f}", *d.kernels_per_step.base),
               fmt::format("{:.0f}", *d.kernels_per_step.now),
               fmt::format("{:>12}", fmt::format("{:+.0f}", *d.kernels_per_step.delta())),
               fmt::format("{:>9}", ratio_text(d.kernels_per_step.ratio())));
  }

  component_table(out, p, lw, "Idle by cause", d.idle);
  component_table(out, p, lw, "GPU time by kernel category", d.categories);
  component_table(out, p, lw, "Precision of matrix math time", d.precision);

  if (!d.kernels.empty()) {
    const double floor_ms = d.kernel_noise_floor_ms();
    out += "\n" + heading(p, "Kernels whose time changed most", "  (ms per step; - not in that run's top 10)", w);
    out += p.dim(
        wrap_text(fmt::format("changes under {:.2f} ms per step (0.02 ms, or 0.2% of BASE's step time where more) "
                              "are noise, not listed",
                              floor_ms),
                  w, "  "));
    bool listed = false;
    for (const auto& k : d.kernels) {
      if (std::abs(k.delta_ms()) < floor_ms) continue;
      listed = true;
      const std::string change = fmt::format("{:>+8.2f}", k.delta_ms());
      auto side_ms = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string("-"); };
      const std::string head =
          fmt::format("{:>7} -> {:<7} {:<14} ", side_ms(k.base_ms), side_ms(k.new_ms), clip(k.category, 14));
      out += "  " + good_bad(p, change, k.delta_ms(), false) + " " + head +
             clip(k.name, w > 13 + head.size() ? w - 13 - head.size() : 10) + "\n";
    }
    if (!listed) out += "  none above the noise floor\n";
  }

  out += "\n" + heading(p, "Findings", "  (estimated speedup if fixed: BASE -> NEW)", w);
  if (d.findings.empty()) out += "  none in either run\n";
  for (const auto& f : d.findings) {
    const std::string status = fmt::format("{:<9}", finding_status_name(f.status));
    const std::string painted = f.status == FindingStatus::kResolved  ? p.green(status)
                                : f.status == FindingStatus::kNew     ? p.red(status)
                                : f.status == FindingStatus::kChanged ? p.yellow(status)
                                                                      : p.dim(status);
    const std::string head =
        fmt::format(" {:<20} {:>6} -> {:<6} ", clip(f.id, 20), speedup_text(f, true), speedup_text(f, false));
    out += "  " + painted + head + p.dim(clip(f.title, w > 11 + head.size() ? w - 11 - head.size() : 10)) + "\n";
  }
}

}  // namespace

std::string render_diff(const ReportDiff& diff, const TextStyle& style) {
  Painter p{style.color};
  std::string out;
  for (size_t i = 0; i < diff.devices.size(); ++i) {
    if (i) out += "\n" + std::string(static_cast<size_t>(style.width), '-') + "\n\n";
    render_device(out, diff.devices[i], p, style.width);
  }
  for (const auto& w : diff.warnings) out += p.yellow(wrap_text("warning: " + w, static_cast<size_t>(style.width), ""));
  return out;
}

}  // namespace gpuscope
