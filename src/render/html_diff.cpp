#include "render/html_diff.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "render/html_page.h"

namespace gpuscope {
namespace {

using html::escape;

// Rows below this many ms per step on both sides are left out, as in the text diff.
constexpr double kShownMs = 0.005;
constexpr std::string_view kBaseColour = "#9aa3b5";
constexpr std::string_view kNewColour = "#3559a8";

std::string ratio_text(std::optional<double> r) {
  return r ? fmt::format("×{:.3f}", *r) : "<span class=null>null</span>";
}

// Green when the change is an improvement, red when a regression, neutral when it shows as
// zero at the decimals written (+0.00 is no change to the reader, whatever its sign).
std::string signed_cell(std::optional<double> delta, std::string_view unit, bool higher_is_better, int decimals = 2) {
  if (!delta) return "<td class=n><span class=null>null</span></td>";
  const bool zero = std::abs(*delta) < 0.5 * std::pow(10.0, -decimals);
  const std::string_view cls = zero ? "unchanged" : (*delta > 0) == higher_is_better ? "resolved" : "new";
  if (zero) return fmt::format("<td class=n><span class={}>{:.{}f}{}</span></td>", cls, 0.0, decimals, unit);
  return fmt::format("<td class=n><span class={}>{:+.{}f}{}</span></td>", cls, *delta, decimals, unit);
}

std::string pct_row(std::string_view label, std::string_view kind, const ValueChange& v, bool higher_is_better = true) {
  return fmt::format("<tr><td>{}{}</td><td class=n>{}</td><td class=n>{}</td>{}<td class=n>{}</td></tr>\n", label,
                     html::provenance(v.base || v.now ? kind : "null"), html::pct(v.base), html::pct(v.now),
                     signed_cell(v.delta(), " pts", higher_is_better, 1), ratio_text(v.ratio()));
}

// Two bars, BASE above NEW, scaled to `max_ms`.
std::string pair_bars(double base, double now, double max_ms) {
  const double scale = max_ms > 0 ? 100.0 / max_ms : 0;
  return html::bar(base * scale, kBaseColour) + "<br>" + html::bar(now * scale, kNewColour);
}

void component_table(std::string& out, std::string_view title, const std::vector<ComponentChange>& rows, bool idle) {
  double max_ms = 0;
  for (const auto& c : rows) max_ms = std::max({max_ms, c.base_ms, c.new_ms});
  std::string body;
  for (const auto& c : rows) {
    if (std::max(c.base_ms, c.new_ms) < kShownMs) continue;
    std::string name = escape(c.name);
    if (idle) {
      if (auto cause = idle_cause_from_name(c.name)) {
        name = fmt::format("<b style=\"color:{}\">■</b> {}", html::cause_colour(*cause), name);
      }
    }
    std::string launches;
    if (c.base_launches || c.new_launches) {
      launches =
          fmt::format("<td class=n>{} → {}</td>", c.base_launches ? fmt::format("{:.0f}", *c.base_launches) : "null",
                      c.new_launches ? fmt::format("{:.0f}", *c.new_launches) : "null");
    }
    body += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=n>{:.2f}</td><td class=n>{:.2f}</td>{}<td class=n>{}</td>{}</tr>\n", name,
        pair_bars(c.base_ms, c.new_ms, max_ms), c.base_ms, c.new_ms, signed_cell(c.delta_ms(), "", false),
        ratio_text(c.ratio()), launches);
  }
  if (body.empty()) return;
  const bool has_launches =
      std::any_of(rows.begin(), rows.end(), [](const auto& c) { return c.base_launches || c.new_launches; });
  out += fmt::format(
      "<h3>{}</h3>\n<table><tr><th></th><th>BASE / NEW</th><th>BASE ms/step</th><th>NEW ms/step</th>"
      "<th>change</th><th>ratio</th>{}</tr>\n{}</table>\n",
      title, has_launches ? "<th>launches per step</th>" : "", body);
}

std::string describe(const HeadlineChange& h) {
  const ComponentChange& c = h.component;
  switch (c.kind) {
    case ComponentKind::kIdle:
      return fmt::format("{} idle", escape(c.name));
    case ComponentKind::kCategory: {
      std::string s = fmt::format("{} kernel time", escape(c.name));
      if (c.base_launches && c.new_launches) {
        s += fmt::format(" ({:.0f} → {:.0f} launches per step)", *c.base_launches, *c.new_launches);
      }
      return s;
    }
    case ComponentKind::kPrecision:
      if (!h.base_dominant_dtype.empty() && !h.new_dominant_dtype.empty() &&
          h.base_dominant_dtype != h.new_dominant_dtype) {
        return fmt::format("precision {} → {} ({} matrix math time)", escape(h.base_dominant_dtype),
                           escape(h.new_dominant_dtype), escape(c.name));
      }
      return fmt::format("{} matrix math time", escape(c.name));
  }
  return escape(c.name);
}

std::string finding_side(const std::optional<Severity>& sev, const std::optional<double>& speedup) {
  if (!sev) return "<span class=null>absent</span>";
  return fmt::format(
      "{} {}", severity_name(*sev),
      speedup ? fmt::format("×{:.2f} {}", *speedup, html::provenance("estimate")) : "<span class=null>null</span>");
}

void findings_table(std::string& out, const DeviceDiff& d) {
  out += "<h3>Findings</h3>\n";
  if (d.findings.empty()) {
    out += "<p>none in either run</p>\n";
    return;
  }
  for (const FindingStatus status :
       {FindingStatus::kResolved, FindingStatus::kNew, FindingStatus::kChanged, FindingStatus::kUnchanged}) {
    std::string rows;
    for (const FindingChange& f : d.findings) {
      if (f.status != status) continue;
      rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", escape(f.id), escape(f.title),
                          finding_side(f.base_severity, f.base_est_speedup),
                          finding_side(f.new_severity, f.new_est_speedup));
    }
    if (rows.empty()) continue;
    out += fmt::format(
        "<h4 class={0}>{0}</h4>\n<table><tr><th>id</th><th>title</th><th>BASE (est. speedup if fixed)</th>"
        "<th>NEW</th></tr>\n{1}</table>\n",
        finding_status_name(status), rows);
  }
}

void device_section(std::string& out, const DeviceDiff& d, size_t index) {
  const std::string title =
      d.base_device == d.new_device ? escape(d.new_device) : escape(d.base_device) + " → " + escape(d.new_device);
  out += fmt::format("<section id=\"diff-{}\">\n<h2>{}{}</h2>\n", index, title,
                     d.rank ? fmt::format(" · rank {}", *d.rank) : "");
  out += fmt::format("<p class=sub>BASE {} · {} steps ({})<br>NEW {} · {} steps ({})</p>\n", escape(d.base_source),
                     d.base_steps, escape(d.base_step_source), escape(d.new_source), d.new_steps,
                     escape(d.new_step_source));
  out += fmt::format("<p>{}</p>\n", d.comparable
                                        ? "The runs are comparable (same device, step definition and FLOPs per step)."
                                        : "<b>The runs are not like for like</b>; see the warnings.");
  for (const std::string& w : d.warnings) out += "<div class=warn>warning: " + escape(w) + "</div>\n";

  out += "<h3>The change that made the difference</h3>\n<p>";
  if (d.headline) {
    const HeadlineChange& h = *d.headline;
    out += fmt::format("<b>{}</b>: {:.2f} → {:.2f} ms per step ({:+.2f} ms)", describe(h), h.component.base_ms,
                       h.component.new_ms, h.component.delta_ms());
    if (h.share_of_step_change && *h.share_of_step_change > 0) {
      out += fmt::format(", {:.0f}% of the step-time change", 100.0 * *h.share_of_step_change);
    }
  } else {
    out += "none: no idle cause, kernel category or precision changed its time per step";
  }
  const std::string faster = d.step_time_ratio > 0 && d.step_time_ratio < 1
                                 ? fmt::format("{:.2f}× faster", 1.0 / d.step_time_ratio)
                             : d.step_time_ratio > 1 ? fmt::format("{:.2f}× slower", d.step_time_ratio)
                                                     : "unchanged";
  out += fmt::format(".<br>Measured step time ×{:.4f}: {:.2f} → {:.2f} ms ({}).</p>\n", d.step_time_ratio,
                     d.step_ms.base.value_or(0), d.step_ms.now.value_or(0), faster);

  out += "<h3>Headline numbers</h3>\n<table><tr><th></th><th>BASE</th><th>NEW</th><th>change</th><th>ratio</th></tr>\n";
  out += fmt::format(
      "<tr><td>Step time{}</td><td class=n>{:.2f} ms</td><td class=n>{:.2f} ms</td>{}<td class=n>{}</td></tr>\n",
      html::provenance("measured"), d.step_ms.base.value_or(0), d.step_ms.now.value_or(0),
      signed_cell(d.step_ms.delta(), " ms", false), ratio_text(d.step_time_ratio));
  out += fmt::format("<tr><td>Throughput ({})</td><td></td><td></td><td></td><td class=n>{}</td></tr>\n",
                     escape(d.throughput_basis), ratio_text(d.throughput_ratio));
  out += pct_row("MFU", "computed", d.mfu_pct);
  out += pct_row("HFU (matmul)", "computed", d.hfu_pct);
  out += pct_row("Utilization (busy)", "measured", d.busy_pct);
  out += pct_row("SM active", "estimate", d.sm_active_est_pct);
  out += pct_row("SM active (hardware)", "measured", d.hw_sm_active_pct);
  out += pct_row("Tensor active (hardware)", "measured", d.hw_tensor_active_pct);
  out += pct_row("Idle", "measured", d.idle_pct, false);
  if (d.kernels_per_step.base && d.kernels_per_step.now) {
    out += fmt::format(
        "<tr><td>Kernels per step</td><td class=n>{:.0f}</td><td class=n>{:.0f}</td>{}<td class=n>{}</td></tr>\n",
        *d.kernels_per_step.base, *d.kernels_per_step.now, signed_cell(d.kernels_per_step.delta(), "", false, 0),
        ratio_text(d.kernels_per_step.ratio()));
  }
  out += "</table>\n";
  out += fmt::format(
      "<div class=legend><span><b style=\"background:{}\"></b>BASE</span><span><b "
      "style=\"background:{}\"></b>NEW</span>"
      "</div>\n",
      kBaseColour, kNewColour);
  component_table(out, "Idle by cause (ms per step)", d.idle, true);
  component_table(out, "GPU time by kernel category (ms per step)", d.categories, false);
  component_table(out, "Precision of matrix math time (ms per step)", d.precision, false);

  if (!d.kernels.empty()) {
    const double floor_ms = d.kernel_noise_floor_ms();
    std::string rows;
    auto side = [](const std::optional<double>& v) {
      return v ? fmt::format("{:.2f}", *v) : "<span class=null>null</span>";
    };
    for (const KernelChange& k : d.kernels) {
      if (std::abs(k.delta_ms()) < floor_ms) continue;
      rows += fmt::format("<tr>{}<td class=n>{}</td><td class=n>{}</td><td>{}</td><td class=name>{}</td></tr>\n",
                          signed_cell(k.delta_ms(), "", false), side(k.base_ms), side(k.new_ms), escape(k.category),
                          html::short_name(k.name));
    }
    out += fmt::format(
        "<h3>Kernels whose time changed most</h3>\n<p class=sub>ms per step, matched by normalised name; "
        "null: not in that run's top kernels; changes under {:.2f} ms per step (0.02 ms, or 0.2% of "
        "BASE's step time where more) are noise and not listed</p>\n",
        floor_ms);
    if (rows.empty()) {
      out += "<p>none above the noise floor</p>\n";
    } else {
      out += "<table><tr><th>change</th><th>BASE</th><th>NEW</th><th>category</th><th>name</th></tr>\n" + rows +
             "</table>\n";
    }
  }
  findings_table(out, d);
  out += "</section>\n";
}

}  // namespace

std::string diff_to_html(const ReportDiff& diff, const html::PageOrigin& origin) {
  std::string title = "gpuscope diff";
  if (!diff.devices.empty())
    title += " · " + diff.devices.front().base_source + " → " + diff.devices.front().new_source;
  std::string out = html::page_head(title);
  out += "<h1>gpuscope diff</h1>\n" + html::origin_line(origin) +
         "<p class=sub>Times are per step; ratios are NEW / BASE.</p>\n";
  for (const std::string& w : diff.warnings) out += "<div class=warn>warning: " + escape(w) + "</div>\n";
  for (size_t i = 0; i < diff.devices.size(); ++i) device_section(out, diff.devices[i], i);
  return out + html::page_tail(origin);
}

}  // namespace gpuscope
