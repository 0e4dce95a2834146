#include "render/html_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include <fmt/core.h>

#include "core/occupancy.h"
#include "render/html_page.h"

namespace gpuscope {
namespace {

using html::escape;

// Picture geometry, in SVG user units (the page scales them to its width).
constexpr double kWidth = 1180;  // Whole picture.
constexpr double kLeft = 150;    // Labels column.
constexpr double kPlot = kWidth - kLeft - 10;
constexpr int kColumns = 590;  // Timeline columns: 2 units each.
constexpr size_t kMaxStepRows = 40;
constexpr int kSampleBins = 590;

// What filled each column of [from, to): index 0 kernels running, 1 + cause an idle cause, as
// shares of the column (they sum to 1). The report's idle intervals cover exactly the window's
// idle time, so the rest of each column is kernel time.
using Shares = std::array<double, kNumIdleCauses + 1>;
std::vector<Shares> column_shares(const std::vector<IdleInterval>& intervals, int64_t from, int64_t to, int n) {
  std::vector<Shares> cols(static_cast<size_t>(n), Shares{});
  if (to <= from || n <= 0) return cols;
  const double span = static_cast<double>(to - from) / n;
  for (const IdleInterval& iv : intervals) {
    const int64_t s = std::max(iv.start_ns, from), e = std::min(iv.end_ns, to);
    if (s >= e) continue;
    const int c0 = std::min(n - 1, static_cast<int>(static_cast<double>(s - from) / span));
    const int c1 = std::min(n - 1, static_cast<int>(static_cast<double>(e - from) / span));
    for (int c = c0; c <= c1; ++c) {
      const double lo = std::max(static_cast<double>(s), static_cast<double>(from) + c * span);
      const double hi = std::min(static_cast<double>(e), static_cast<double>(from) + (c + 1) * span);
      if (hi > lo) cols[static_cast<size_t>(c)][1 + static_cast<size_t>(iv.cause)] += (hi - lo) / span;
    }
  }
  for (Shares& col : cols) {
    double idle = 0;
    for (size_t i = 1; i < col.size(); ++i) idle += col[i];
    col[0] = std::max(0.0, 1.0 - idle);
  }
  return cols;
}

std::string_view state_colour(size_t state) {
  return state == 0 ? html::kKernelColour : html::cause_colour(static_cast<IdleCauseId>(state - 1));
}

// One lane of stacked columns at (x, y), w x h: kernels at the bottom, the idle causes above in
// table order. One path per state; runs of equal columns are one rectangle.
std::string stacked_lane(const std::vector<Shares>& cols, double x, double y, double w, double h) {
  // Kernels fill the lane's background (each column's kernel share is the rest of it), so
  // columns never show seams between them.
  std::string out = fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", x,
                                y, w, h, html::kKernelColour);
  const double cw = w / static_cast<double>(cols.size());
  std::vector<double> base(cols.size(), 0.0);
  for (size_t st = 0; st < kNumIdleCauses + 1; ++st) {
    std::string d;
    double run_x = 0, run_w = 0, run_y = 0, run_h = 0;
    auto flush = [&] {
      if (run_w > 0 && run_h > 0)
        d += fmt::format("M{:.1f} {:.1f}h{:.1f}v{:.1f}h-{:.1f}z", run_x, run_y, run_w, run_h, run_w);
      run_w = 0;
    };
    for (size_t c = 0; c < cols.size(); ++c) {
      const double ch = std::round(cols[c][st] * h * 10) / 10;
      const double cy = std::round((y + h - base[c] - ch) * 10) / 10;
      base[c] += ch;
      if (run_w > 0 && ch == run_h && cy == run_y) {
        run_w += cw;
        continue;
      }
      flush();
      run_x = x + static_cast<double>(c) * cw, run_w = cw, run_y = cy, run_h = ch;
    }
    flush();
    if (!d.empty() && st > 0) out += fmt::format("<path fill=\"{}\" d=\"{}\"/>\n", state_colour(st), d);
  }
  return out;
}

// Time labels under a lane spanning `span_ns`.
std::string time_axis(double x, double y, double w, double span_ns) {
  std::string out;
  for (int i = 0; i <= 5; ++i) {
    const double tx = x + w * i / 5.0;
    out += fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#8a93a5\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"{4}\">{5:.2f} ms</text>\n",
        tx, y, y + 4, y + 15,
        i == 0   ? "start"
        : i == 5 ? "end"
                 : "middle",
        span_ns * i / 5.0 / 1e6);
  }
  return out;
}

const StepReport* median_step(const DeviceReport& d) {
  if (d.steps.empty()) return nullptr;
  std::vector<const StepReport*> by_duration;
  for (const StepReport& s : d.steps) by_duration.push_back(&s);
  std::sort(by_duration.begin(), by_duration.end(),
            [](const StepReport* a, const StepReport* b) { return a->duration_ns < b->duration_ns; });
  return by_duration[by_duration.size() / 2];
}

void timeline_section(std::string& out, const DeviceReport& d) {
  out += "<h3>Timeline of the window</h3>\n";
  if (d.window_ns <= 0) {
    out += "<p class=null>empty window</p>\n";
    return;
  }
  if (d.idle_intervals.empty() && d.idle_pct > 0) {
    // A report read back from JSON has no intervals: drawing the window as all kernels would lie.
    out += "<p class=null>this report carries no idle intervals to draw</p>\n";
    return;
  }
  out += fmt::format(
      "<p class=sub>Each column is {} of the window: kernels running (bottom) and the idle causes "
      "stacked by their share of it. Ticks mark step starts.</p>\n",
      html::ms(static_cast<double>(d.window_ns) / kColumns));
  const StepReport* zoom = d.steps.size() > 1 ? median_step(d) : nullptr;
  const double lane_h = 46, height = zoom ? 170 : 80;
  out += fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"{}\" role=\"img\" aria-label=\"timeline\">\n", kWidth, height,
                     kWidth);
  const int64_t from = d.window_start_ns, to = d.window_start_ns + d.window_ns;
  out += "<text x=\"4\" y=\"30\">whole window</text>\n";
  out += stacked_lane(column_shares(d.idle_intervals, from, to, kColumns), kLeft, 8, kPlot, lane_h);
  const bool label = d.steps.size() <= 30;
  for (const StepReport& s : d.steps) {
    const double x = kLeft + kPlot * static_cast<double>(s.start_ns - from) / static_cast<double>(d.window_ns);
    if (x < kLeft || x > kLeft + kPlot) continue;
    out +=
        fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"4\" y2=\"{1}\" stroke=\"#1d2330\" stroke-width=\"0.6\"/>",
                    x, 8 + lane_h);
    if (label) out += fmt::format("<text x=\"{:.1f}\" y=\"7\" font-size=\"8\">#{}</text>", x + 1, s.number);
  }
  out += time_axis(kLeft, 8 + lane_h, kPlot, static_cast<double>(d.window_ns));
  if (zoom) {
    const double y = 95;
    out += fmt::format("<text x=\"4\" y=\"{:.0f}\">step #{} (median)</text>\n", y + 22, zoom->number);
    out += stacked_lane(column_shares(d.idle_intervals, zoom->start_ns, zoom->start_ns + zoom->duration_ns, kColumns),
                        kLeft, y, kPlot, lane_h);
    out += time_axis(kLeft, y + lane_h, kPlot, static_cast<double>(zoom->duration_ns));
  }
  out += "</svg>\n" + html::cause_legend();
}

void steps_section(std::string& out, const DeviceReport& d) {
  out += "<h3>Idle causes by step</h3>\n";
  if (d.steps.empty() || (d.idle_intervals.empty() && d.idle_pct > 0)) {
    out += "<p class=null>no steps or no idle intervals to draw</p>\n";
    return;
  }
  const size_t rows = std::min(d.steps.size(), kMaxStepRows);
  int64_t longest = 1;
  for (size_t i = 0; i < rows; ++i) longest = std::max(longest, d.steps[i].duration_ns);
  if (rows < d.steps.size()) out += fmt::format("<p class=sub>the first {} of {} steps</p>\n", rows, d.steps.size());
  const double row_h = 16, height = static_cast<double>(rows) * row_h + 8;
  out += fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"{}\" role=\"img\" aria-label=\"idle causes by step\">\n",
                     kWidth, height, kWidth);
  for (size_t i = 0; i < rows; ++i) {
    const StepReport& s = d.steps[i];
    const double y = 4 + static_cast<double>(i) * row_h;
    out += fmt::format("<text x=\"4\" y=\"{:.0f}\">#{} {:.2f} ms · busy {:.0f}%</text>", y + 11, s.number,
                       static_cast<double>(s.duration_ns) / 1e6, s.busy_pct);
    const Shares sh = column_shares(d.idle_intervals, s.start_ns, s.start_ns + s.duration_ns, 1).front();
    double x = kLeft;
    const double w = kPlot * static_cast<double>(s.duration_ns) / static_cast<double>(longest);
    for (size_t st = 0; st < sh.size(); ++st) {
      if (sh[st] <= 0) continue;
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{:.0f}\" fill=\"{}\"/>", x, y,
                         sh[st] * w, row_h - 3, state_colour(st));
      x += sh[st] * w;
    }
    out += "\n";
  }
  out += "</svg>\n";
}

struct SampleMetric {
  const char* name;
  std::optional<double> DeviceSample::*field;
  const char* colour;
};
constexpr SampleMetric kSampleMetrics[] = {
    {"utilization (NVML)", &DeviceSample::gpu_util_pct, "#4a78c2"},
    {"SM active (GPM)", &DeviceSample::sm_active_pct, "#2e9d4e"},
    {"tensor active (GPM)", &DeviceSample::tensor_active_pct, "#d62728"},
    {"DRAM bandwidth (GPM)", &DeviceSample::dram_bw_pct, "#ff7f0e"},
};

void samples_section(std::string& out, const DeviceReport& d, std::span<const Trace> traces) {
  std::vector<const DeviceSample*> samples;
  for (const Trace& t : traces) {
    if (t.source != d.source) continue;
    for (const DeviceSample& s : t.device_samples) {
      if (s.device == d.device) samples.push_back(&s);
    }
  }
  if (samples.empty()) return;
  out += "<h3>Device samples over time</h3>\n";
  // Each sample drawn where its readings belong on the kernels' timeline: moved back by the lag
  // measured against them (DeviceReport::hw_sample_lag_ns), where it was.
  const int64_t lag = d.hw_sample_lag_ns.value_or(0);
  const int64_t from = samples.front()->time_ns - lag - samples.front()->interval_ns;
  const int64_t to = std::max(samples.back()->time_ns - lag, from + 1);
  const double span = static_cast<double>(to - from);
  out += fmt::format(
      "<p class=sub>{} hardware counter samples (percent, each over its interval), mean per {} bin{}; the "
      "shaded band is the analysed window.</p>\n",
      samples.size(), html::ms(span / kSampleBins),
      lag > 0 ? fmt::format(", each moved back by the {} ms its readings lag the kernels", lag / 1'000'000) : "");
  const double top = 8, h = 150;
  std::string svg = fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"{}\" role=\"img\" aria-label=\"device samples\">\n",
                                kWidth, top + h + 22, kWidth);
  const double wx0 = kLeft + kPlot * std::clamp(static_cast<double>(d.window_start_ns - from) / span, 0.0, 1.0);
  const double wx1 =
      kLeft + kPlot * std::clamp(static_cast<double>(d.window_start_ns + d.window_ns - from) / span, 0.0, 1.0);
  svg += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"#eef0f4\"/>\n", wx0, top,
                     std::max(0.0, wx1 - wx0), h);
  for (int p = 0; p <= 100; p += 25) {
    const double y = top + h - h * p / 100.0;
    svg += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e1e4ea\"/><text x=\"{}\" y=\"{:.1f}\" "
        "text-anchor=\"end\">{}%</text>\n",
        kLeft, kLeft + kPlot, y, y, kLeft - 4, y + 4, p);
  }
  std::string legend = "<div class=legend>", absent;
  for (const SampleMetric& m : kSampleMetrics) {
    std::vector<double> sum(kSampleBins, 0.0);
    std::vector<int> count(kSampleBins, 0);
    for (const DeviceSample* s : samples) {
      const auto& v = s->*m.field;
      if (!v || !std::isfinite(*v)) continue;
      const int bin = std::clamp(static_cast<int>(static_cast<double>(s->time_ns - lag - from) / span * kSampleBins), 0,
                                 kSampleBins - 1);
      sum[static_cast<size_t>(bin)] += *v;
      ++count[static_cast<size_t>(bin)];
    }
    std::string path;
    bool pen = false;
    for (int b = 0; b < kSampleBins; ++b) {
      if (count[static_cast<size_t>(b)] == 0) continue;  // An empty bin is skipped, not drawn as 0.
      const double v = std::clamp(sum[static_cast<size_t>(b)] / count[static_cast<size_t>(b)], 0.0, 100.0);
      path += fmt::format("{}{:.1f} {:.1f}", pen ? "L" : "M", kLeft + kPlot * (b + 0.5) / kSampleBins,
                          top + h - h * v / 100);
      pen = true;
    }
    if (path.empty()) {
      absent += std::string(absent.empty() ? "" : ", ") + m.name;
      continue;
    }
    svg += fmt::format("<path fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" d=\"{}\"/>\n", m.colour, path);
    legend += fmt::format("<span><b style=\"background:{}\"></b>{}</span>", m.colour, m.name);
  }
  svg += time_axis(kLeft, top + h, kPlot, span);
  out += svg + "</svg>\n" + legend + "</div>\n";
  if (!absent.empty()) out += fmt::format("<p class=sub>not measured (null) in these samples: {}</p>\n", absent);
}

struct Headline {
  const char* label;
  std::optional<double> value;
  const char* kind;  // measured, estimate, computed
  std::string note;
};

void headline_section(std::string& out, const DeviceReport& d) {
  const std::vector<Headline> cards = {
      {"Utilization (busy)", d.busy_pct, "measured", "any kernel running: what nvidia-smi shows"},
      {"SM active", d.sm_active_est_pct, "estimate",
       d.sm_active_est_pct ? "kernel time weighted by min(1, blocks/SMs)"
                           : "needs the GPU's SM count (unknown device)"},
      {"SM active (hardware)", d.hw_sm_active_pct, "measured", hardware_source(d, d.hw_sm_active_pct)},
      {"Tensor active (hardware)", d.hw_tensor_active_pct, "measured", hardware_source(d, d.hw_tensor_active_pct)},
      {"MFU", d.mfu_pct, "computed", d.mfu_pct ? "model FLOPs / dense peak" : "needs --model or --flops-per-step"},
      {"HFU (matmul)", d.hfu_pct, "computed",
       d.hfu_pct                    ? "matmul FLOPs from shapes / dense peak"
       : !d.hfu_unavailable.empty() ? d.hfu_unavailable
                                    : "needs record_shapes=True and a known peak"},
  };
  out += "<div class=cards>\n";
  for (const Headline& c : cards) {
    out += fmt::format("<div class=card><div class=l>{}{}</div><div class=v>{}</div>{}<div class=l>{}</div></div>\n",
                       c.label, html::provenance(c.value ? c.kind : "null"), html::pct(c.value),
                       c.value ? html::bar(*c.value, "#3559a8") : "", escape(c.note));
  }
  out += "</div>\n";
  if (d.hw_gpu_util_pct) {
    out +=
        fmt::format("<p class=sub>NVML utilization in the samples: {} (measured).</p>\n", html::pct(d.hw_gpu_util_pct));
  }
  if (d.peak_tflops)
    out += fmt::format("<p class=sub>peak {:.1f} TFLOP/s: {}</p>\n", *d.peak_tflops, escape(d.peak_basis));
  if (!d.model_flops_formula.empty())
    out += fmt::format("<p class=sub>model FLOPs: {}</p>\n", escape(d.model_flops_formula));
  if (d.matmul_flops_per_step) {
    out += fmt::format("<p class=sub>matmul FLOPs per step (from op shapes): {:.4g}</p>\n", *d.matmul_flops_per_step);
  }
}

void idle_table(std::string& out, const DeviceReport& d) {
  const double steps = static_cast<double>(std::max<int64_t>(1, d.step_count));
  out += fmt::format("<h3>Idle {:.1f}% of the window, by cause</h3>\n", d.idle_pct);
  out +=
      "<table><tr><th>cause</th><th>share of window</th><th></th><th>per step</th><th>what the host was "
      "doing</th></tr>\n";
  for (const IdleCause& c : d.idle_causes) {
    if (c.ns <= 0) continue;
    std::string host;
    for (const HostTime& h : c.top_host) host += (host.empty() ? "" : "<br>") + escape(h.name);
    out += fmt::format(
        "<tr><td><b style=\"color:{}\">■</b> {}</td><td class=n>{:.1f}%</td><td>{}</td><td class=n>{}</td>"
        "<td class=name>{}</td></tr>\n",
        html::cause_colour(c.cause), idle_cause_name(c.cause), c.pct, html::bar(c.pct, html::cause_colour(c.cause)),
        html::ms(static_cast<double>(c.ns) / steps), host);
  }
  out += "</table>\n";
}

void kernels_section(std::string& out, const DeviceReport& d) {
  const double steps = static_cast<double>(std::max<int64_t>(1, d.step_count));
  out += fmt::format("<h3>GPU time by category ({} kernels)</h3>\n", d.kernel_count);
  out += "<table><tr><th>category</th><th>share</th><th></th><th>per step</th><th>launches</th></tr>\n";
  for (const CategoryTime& c : d.categories) {
    if (c.ns <= 0) continue;
    out +=
        fmt::format("<tr><td>{}</td><td class=n>{:.1f}%</td><td>{}</td><td class=n>{}</td><td class=n>{}</td></tr>\n",
                    escape(c.category), c.pct, html::bar(c.pct), html::ms(static_cast<double>(c.ns) / steps), c.count);
  }
  out += "</table>\n";
  out += fmt::format("<p class=sub>{:.0f}% of kernels under 10 us ({:.1f}% of kernel time)",
                     d.launch.under_10us_count_pct, d.launch.under_10us_time_pct);
  if (d.launch.shorter_than_launch_pct) {
    out += fmt::format("; {:.0f}% shorter than their launch call", *d.launch.shorter_than_launch_pct);
  }
  out +=
      "</p>\n<h3>Top kernels</h3>\n<table><tr><th>share of kernel time</th><th>count</th><th>category</th><th>per "
      "step</th>"
      "<th>name</th></tr>\n";
  for (const TopKernel& k : d.top_kernels) {
    out += fmt::format(
        "<tr><td class=n>{:.1f}% {}</td><td class=n>{}</td><td>{}</td><td class=n>{}</td><td class=name>{}</td></tr>\n",
        k.pct, html::bar(k.pct), k.count, escape(k.category), html::ms(static_cast<double>(k.ns) / steps),
        html::short_name(k.name));
  }
  out += "</table>\n<h3>Precision of matrix math time (GEMM, convolution, attention)</h3>\n";
  if (d.precision.empty()) {
    out += "<p class=null>no matrix math kernels, or their precision is unknown</p>\n";
  } else {
    out += "<table><tr><th>dtype</th><th>share</th><th></th></tr>\n";
    for (const PrecisionTime& p : d.precision) {
      out += fmt::format("<tr><td>{}</td><td class=n>{:.1f}%</td><td>{}</td></tr>\n", escape(p.dtype), p.pct,
                         html::bar(p.pct));
    }
    out += "</table>\n";
  }
  if (!d.fusion.empty()) {
    out +=
        "<h3>Fusion candidates</h3>\n<table><tr><th>occurrences</th><th>share of window</th><th>kernel time saved "
        "per step (estimate)</th><th>kernels</th></tr>\n";
    for (const FusionCandidate& f : d.fusion) {
      std::string chain;
      for (const std::string& k : f.kernels) chain += (chain.empty() ? "" : " → ") + escape(k);
      out +=
          fmt::format("<tr><td class=n>{}</td><td class=n>{:.1f}%</td><td class=n>{}</td><td class=name>{}</td></tr>\n",
                      f.occurrences, f.pct, html::ms(static_cast<double>(f.est_saving_ns) / steps), chain);
    }
    out += "</table>\n";
  }
}

void findings_list(std::string& out, const std::vector<Finding>& findings) {
  if (findings.empty()) {
    out += "<p>none above the reporting thresholds</p>\n";
    return;
  }
  for (const Finding& f : findings) {
    const std::string_view sev = severity_name(f.severity);
    out += fmt::format(
        "<div class=\"finding {0}\"><div class=t>[{0}] {1} · {2}{3}</div><div class=e>{4}</div>"
        "<div class=r>→ {5}</div></div>\n",
        sev, escape(f.id), escape(f.title),
        f.est_speedup ? fmt::format(" · ×{:.2f} {}", *f.est_speedup, html::provenance("estimate")) : "",
        escape(f.evidence), escape(f.recommendation));
  }
}

void device_section(std::string& out, const DeviceReport& d, size_t index, std::span<const Trace> traces) {
  out += fmt::format("<section id=\"device-{}\">\n<h2>{} · {}{}</h2>\n", index, escape(d.name),
                     d.num_sms ? fmt::format("{} SMs", *d.num_sms) : "SM count unknown",
                     d.rank ? fmt::format(" · rank {}", *d.rank) : "");
  out += fmt::format("<p class=sub>{}<br>window {} · {} step{} ({}){}", escape(d.source),
                     html::ms(static_cast<double>(d.window_ns)), d.step_count, d.step_count == 1 ? "" : "s",
                     escape(d.step_source), d.step_mean_ms ? fmt::format(" · {:.2f} ms/step", *d.step_mean_ms) : "");
  if (d.steps_skipped_warmup || d.excluded_before_ns || d.excluded_after_ns) {
    out += fmt::format("<br>left out: {} warm-up step{}, {} before, {} after", d.steps_skipped_warmup,
                       d.steps_skipped_warmup == 1 ? "" : "s", html::ms(static_cast<double>(d.excluded_before_ns)),
                       html::ms(static_cast<double>(d.excluded_after_ns)));
  }
  out += "</p>\n";
  headline_section(out, d);
  timeline_section(out, d);
  steps_section(out, d);
  idle_table(out, d);
  kernels_section(out, d);
  samples_section(out, d, traces);
  out +=
      "<h3>Findings</h3>\n<p class=sub>each with its evidence from this trace and the estimated speedup of the whole "
      "step if fixed</p>\n";
  findings_list(out, d.findings);
  out += "</section>\n";
}

}  // namespace

std::string report_to_html(const Report& report, std::span<const Trace> traces, const html::PageOrigin& origin) {
  std::string title = "gpuscope report";
  if (!report.devices.empty()) title += " · " + report.devices.front().source;
  std::string out = html::page_head(title);
  out += "<h1>gpuscope report</h1>\n" + html::origin_line(origin);
  out += fmt::format("<p class=sub>{} device report{}</p>\n", report.devices.size(),
                     report.devices.size() == 1 ? "" : "s");
  for (const std::string& w : report.warnings) out += "<div class=warn>warning: " + escape(w) + "</div>\n";
  for (const std::string& r : report.rejected) out += "<div class=warn>skipped: " + escape(r) + "</div>\n";
  if (report.ranks) {
    const RankSummary& r = *report.ranks;
    out += fmt::format("<section id=\"ranks\"><h2>Across {} ranks/devices</h2>\n<p>busy {:.1f}% .. {:.1f}%", r.ranks,
                       r.busy_min_pct, r.busy_max_pct);
    if (r.step_min_ms && r.step_max_ms) {
      out +=
          fmt::format(" · step {:.2f} .. {:.2f} ms (slowest: {})", *r.step_min_ms, *r.step_max_ms, escape(r.slowest));
    }
    out += "</p>\n";
    findings_list(out, r.findings);
    out += "</section>\n";
  }
  for (size_t i = 0; i < report.devices.size(); ++i) device_section(out, report.devices[i], i, traces);
  return out + html::page_tail(origin);
}

}  // namespace gpuscope
