#include "render/report_text.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>

#include <fmt/core.h>

#include "core/catalog.h"
#include "core/occupancy.h"
#include "render/text_layout.h"

namespace gpuscope {
namespace {

std::string bar(double pct, int width) {
  const double clamped = std::clamp(pct, 0.0, 100.0);
  const int full = static_cast<int>(std::lround(clamped / 100.0 * width));
  std::string s;
  for (int i = 0; i < width; ++i) s += i < full ? "█" : "░";
  return s;
}

std::string ms(int64_t ns) { return fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6); }

// The headline bars: 30 cells at 100 columns, fewer on a narrower screen (10 at 80), so that
// a 35-column note still fits beside them.
int headline_bar_cells(int width) { return std::clamp(width - 70, 10, 30); }
// The category bars: 25 cells at 86 columns or more, fewer below.
int category_bar_cells(int width) {
  return width >= 70 ? std::clamp(width - 61, 9, 25) : std::clamp(width - 45, 4, 25);
}

// `line` (already made safe), and when wider than `width`, wrapped with `indent`.
std::string fitted(const std::string& line, int width, std::string_view indent) {
  if (display_width(line) <= static_cast<size_t>(width)) return line + "\n";
  const size_t lead = std::min(line.find_first_not_of(' '), line.size());
  const std::string wrapped = wrap_text(line.substr(lead), static_cast<size_t>(width), indent);
  return std::string(lead, ' ') + wrapped.substr(std::min(indent.size(), wrapped.size()));
}

// The window's timeline letters resampled to `cells` columns (each column shows the letter
// at its middle).
std::string resample(std::string_view timeline, size_t cells) {
  if (timeline.size() <= cells) return std::string(timeline);
  std::string out;
  for (size_t c = 0; c < cells; ++c) out += timeline[(2 * c + 1) * timeline.size() / (2 * cells)];
  return out;
}

// The timeline's idle letters, highlighted: input and sync (host work in the training loop that
// starves the GPU) first, then the others; a cause not named here follows in table order.
constexpr IdleCauseId kLegendOrder[] = {IdleCauseId::kInput,  IdleCauseId::kSync,   IdleCauseId::kMemcpy,
                                        IdleCauseId::kAlloc,  IdleCauseId::kLaunch, IdleCauseId::kCollective,
                                        IdleCauseId::kQueued, IdleCauseId::kOther};

bool is_loop_cause_letter(char c) {
  return c == idle_cause_letter(IdleCauseId::kInput) || c == idle_cause_letter(IdleCauseId::kSync);
}

// " i input s sync m memcpy ...": the causes whose letters appear in `timeline` (all of them
// would not fit 80 columns).
std::string timeline_legend(std::string_view timeline) {
  std::string out;
  auto add = [&](IdleCauseId id) {
    if (timeline.find(idle_cause_letter(id)) == std::string_view::npos) return;
    out += fmt::format(" {} {}", idle_cause_letter(id), idle_cause_name(id));
  };
  for (IdleCauseId id : kLegendOrder) add(id);
  for (const IdleCauseInfo& c : kIdleCauseTable) {
    if (std::find(std::begin(kLegendOrder), std::end(kLegendOrder), c.id) == std::end(kLegendOrder)) add(c.id);
  }
  return out.empty() ? " none shown" : out;
}

std::string headline_row(const Painter& p, std::string_view label, std::optional<double> value, std::string_view note,
                         int width) {
  const int cells = headline_bar_cells(width);
  const std::string head =
      value ? fmt::format("  {:<22} {:>5.1f}%  {}  ", label, *value, bar(*value, cells))
            : fmt::format("  {:<22} {:>6}  {}  ", label, "n/a", std::string(static_cast<size_t>(cells), ' '));
  const size_t lead = display_width(head);
  // The note beside the bar, wrapped under itself; on the next line where too little room is left.
  const size_t room = static_cast<size_t>(width) > lead ? static_cast<size_t>(width) - lead : 0;
  if (room < 16)
    return head.substr(0, head.find_last_not_of(' ') + 1) + "\n" +
           p.dim(wrap_text(note, static_cast<size_t>(width), "    "));
  const std::string wrapped = wrap_text(note, room, "");
  std::string out;
  size_t pos = 0;
  bool first = true;
  while (pos < wrapped.size()) {
    const size_t end = wrapped.find('\n', pos);
    out += (first ? head : std::string(lead, ' ')) + p.dim(wrapped.substr(pos, end - pos)) + "\n";
    first = false;
    pos = end + 1;
  }
  if (first) out = head.substr(0, head.find_last_not_of(' ') + 1) + "\n";
  return out;
}

// Communication kernels: their share, the part no compute hides, and each collective's
// bandwidth as nccl-tests defines it.
void render_communication(std::string& out, const CommunicationReport& c, int64_t steps, const Painter& p, int width) {
  const double per_step = static_cast<double>(c.exposed_ns) / 1e6 / static_cast<double>(std::max<int64_t>(1, steps));
  out += p.dim(wrap_text(fmt::format("communication: {:.1f}% of the window in collectives, {:.1f}% exposed (no "
                                     "other kernel running: {:.2f} ms/step)",
                                     c.pct, c.exposed_pct, per_step),
                         static_cast<size_t>(width), "  "));
  for (size_t i = 0; i < c.collectives.size() && i < 4; ++i) {
    const CollectiveStats& s = c.collectives[i];
    std::string line = fmt::format("  {} {} x{}: {:.2f} ms", s.op, s.dtype, s.count, static_cast<double>(s.ns) / 1e6);
    if (s.bytes) line += fmt::format(", {:.1f} MB", static_cast<double>(*s.bytes) / 1e6);
    if (s.algbw_gbps) line += fmt::format(", algbw {:.1f}", *s.algbw_gbps);
    if (s.busbw_gbps)
      line += fmt::format(", busbw {:.1f} GB/s", *s.busbw_gbps);
    else if (s.algbw_gbps)
      line += " GB/s";
    if (s.group_size) line += fmt::format(" ({} ranks)", *s.group_size);
    out += p.dim(fitted(line, width, "    "));
  }
}

void render_findings(std::string& out, const std::vector<Finding>& findings, const Painter& p, int width) {
  int n = 0;
  for (const auto& f : findings) {
    const std::string name(severity_name(f.severity));
    const std::string sev = f.severity == Severity::kHigh     ? p.red(name)
                            : f.severity == Severity::kMedium ? p.yellow(name)
                                                              : p.green(name);
    // The title wraps under itself; the number, severity, id and speedup are never cut.
    const std::string speedup = f.est_speedup ? fmt::format("×{:.2f} est.", *f.est_speedup) : "";
    const std::string plain_head = fmt::format("  {}. [{}] {}  {}  ", ++n, name, terminal_safe(f.id), speedup);
    const size_t lead = display_width(plain_head);
    // As many words as fit beside the head; the rest below, indented like the evidence.
    const std::string safe_title = terminal_safe(f.title);
    size_t fit = 0;
    for (size_t end = 0;
         end != std::string::npos && lead + display_width(safe_title.substr(0, end)) <= static_cast<size_t>(width);) {
      fit = end;
      if (end == safe_title.size()) break;
      end = safe_title.find(' ', end + 1);
      if (end == std::string::npos) end = safe_title.size();
    }
    std::string title = safe_title.substr(0, fit) + "\n";
    if (fit < safe_title.size())
      title += wrap_text(safe_title.substr(fit + (fit > 0 ? 1 : 0)), static_cast<size_t>(width), "     ");
    out += fmt::format("  {}. [{}] {}  {}  {}", n, sev, p.bold(terminal_safe(f.id)),
                       f.est_speedup ? p.cyan(speedup) : "", title);
    out += p.dim(wrap_text(f.evidence, width, "     "));
    out += wrap_text("→ " + f.recommendation, width, "     ");
  }
}

void render_device(std::string& out, const DeviceReport& d, const Painter& p, int width) {
  const double steps = std::max<int64_t>(1, d.step_count);
  std::string title =
      fmt::format("{} · {}", terminal_safe(d.name), d.num_sms ? fmt::format("{} SMs", *d.num_sms) : "SM count unknown");
  if (d.rank) title += fmt::format(" · rank {}", *d.rank);
  out += p.bold(cut(fmt::format("gpuscope · {}", title), static_cast<size_t>(width))) + "\n";
  out += p.dim("  " + elide_path(d.source, static_cast<size_t>(width) - 2)) + "\n";
  out += p.dim(
      wrap_text(fmt::format("window {} · {} step{} ({}){}", ms(d.window_ns), d.step_count, d.step_count == 1 ? "" : "s",
                            d.step_source, d.step_mean_ms ? fmt::format(" · {:.2f} ms/step", *d.step_mean_ms) : ""),
                width, "  "));
  // What the window leaves out: warm-up and partial steps, and the device's activity before
  // and after them (start-up, compilation, teardown), which is not analysed as idle.
  std::string left_out;
  if (d.steps_skipped_warmup)
    left_out += fmt::format("{} warm-up step{}, ", d.steps_skipped_warmup, d.steps_skipped_warmup == 1 ? "" : "s");
  if (d.steps_dropped_last) left_out += "the partial last step, ";
  if (d.excluded_before_ns > 0 || d.excluded_after_ns > 0) {
    left_out += fmt::format("{} before, {} after", ms(d.excluded_before_ns), ms(d.excluded_after_ns));
  } else if (!left_out.empty()) {
    left_out.resize(left_out.size() - 2);
  }
  if (!left_out.empty()) out += p.dim(wrap_text("left out: " + left_out, static_cast<size_t>(width), "  "));
  out += "\n";

  out += headline_row(
      p, "Utilization (busy)", d.busy_pct,
      is_amd_device(d.name) ? "any kernel running (= rocm-smi GPU use)" : "any kernel running (= nvidia-smi)", width);
  if (d.communication) {
    out += headline_row(p, "Busy without comm.", d.communication->busy_without_comm_pct,
                        "collective kernels not counted", width);
  }
  out +=
      headline_row(p, "SM active (estimate)", d.sm_active_est_pct,
                   d.sm_active_est_pct ? "grid sizes vs SM count" : "needs the GPU's SM count (unknown device)", width);
  // Rows for hardware readings where the input has GPM samples (none in profiler traces).
  if (d.hw_sm_active_pct || d.hw_gpm_samples > 0)
    out += headline_row(p, "SM active (hardware)", d.hw_sm_active_pct, hardware_source(d, d.hw_sm_active_pct), width);
  if (d.hw_tensor_active_pct)
    out += headline_row(p, "Tensor active (hw)", d.hw_tensor_active_pct, hardware_source(d, d.hw_tensor_active_pct),
                        width);
  out += headline_row(p, "MFU", d.mfu_pct, d.mfu_pct ? "model FLOPs / dense peak" : "needs --model or --flops-per-step",
                      width);
  out += headline_row(p, "HFU (matmul)", d.hfu_pct,
                      d.hfu_pct                    ? "matmul FLOPs from shapes / peak"
                      : !d.hfu_unavailable.empty() ? d.hfu_unavailable
                                                   : "needs record_shapes=True, known peak",
                      width);
  if (d.peak_tflops)
    out += p.dim(wrap_text(fmt::format("peak {:.1f} TFLOP/s: {}", *d.peak_tflops, d.peak_basis), width, "  "));
  if (d.model_flops_per_step) {
    out += p.dim(wrap_text(fmt::format("model FLOPs per step: {}", flops_text(*d.model_flops_per_step)), width, "  "));
  }
  if (!d.model_flops_formula.empty()) out += p.dim(wrap_text("model FLOPs: " + d.model_flops_formula, width, "  "));
  if (d.matmul_flops_per_step) {
    out += p.dim(wrap_text(
        fmt::format("matmul FLOPs per step (from op shapes): {}", flops_text(*d.matmul_flops_per_step)), width, "  "));
  }
  if (d.serving) {
    const auto& sv = *d.serving;
    out += p.dim(wrap_text(
        fmt::format("serving: {:.1f} iterations/s · {} tokens/iteration · {} GPU/iteration", sv.iterations_per_s,
                    sv.tokens_per_iteration_mean ? fmt::format("{:.1f}", *sv.tokens_per_iteration_mean) : "n/a",
                    duration_text(sv.gpu_ms_per_iteration * 1e6)),
        width, "  "));
  }
  if (d.communication) render_communication(out, *d.communication, d.step_count, p, width);
  if (d.copy_pct > 0.05) out += p.dim(fmt::format("  copy/set engines busy {:.1f}% of the window", d.copy_pct)) + "\n";

  if (d.steps.size() > 1) {
    // One compact line per up to four steps: duration and busy share, to spot outliers.
    out += p.dim("  steps:");
    size_t col = 9;
    for (size_t i = 0; i < d.steps.size() && i < 16; ++i) {
      const auto& st = d.steps[i];
      const std::string cell =
          fmt::format(" #{} {:.1f} ms {:.0f}% busy", st.number, static_cast<double>(st.duration_ns) / 1e6, st.busy_pct);
      if (col + cell.size() + 1 > static_cast<size_t>(width)) {
        out += "\n        ";
        col = 8;
      }
      out += p.dim(cell + (i + 1 < d.steps.size() ? ";" : ""));
      col += cell.size() + 1;
    }
    if (d.steps.size() > 16) {
      const std::string more = fmt::format(" ... ({} steps)", d.steps.size());
      if (col + more.size() > static_cast<size_t>(width)) out += "\n        ";
      out += p.dim(more);
    }
    out += "\n";
  }
  if (!d.timeline.empty()) {
    // The window as a strip: a block where kernels ran, the idle cause's letter elsewhere.
    const std::string shown = resample(d.timeline, static_cast<size_t>(width) - 2);
    const std::string legend = fmt::format(
        " {} per column; █ kernels, idle:{}",
        duration_text(static_cast<double>(d.window_ns) / static_cast<double>(shown.size())), timeline_legend(shown));
    out += "\n" + p.bold("Timeline") + p.dim(cut(legend, static_cast<size_t>(width) - 8)) + "\n  ";
    for (char c : shown) {
      if (c == 'K') {
        out += p.green("█");
      } else {
        const std::string letter(1, c);
        out += is_loop_cause_letter(c) ? p.red(letter) : p.yellow(letter);
      }
    }
    out += "\n";
  }

  out += "\n" + heading(p, fmt::format("Idle {:.1f}% of the window", d.idle_pct),
                        "  (cause · share · per step · host doing)", static_cast<size_t>(width));
  std::vector<const IdleCause*> causes;
  for (const auto& c : d.idle_causes)
    if (c.ns > 0) causes.push_back(&c);
  std::sort(causes.begin(), causes.end(), [](auto* a, auto* b) { return a->ns > b->ns; });
  for (const IdleCause* c : causes) {
    std::string host;
    for (const auto& h : c->top_host) {
      if (!host.empty()) host += ", ";
      host += clip(h.name, 40);
    }
    out += fmt::format("  {:<11} {:>5.1f}%  {:>10}  {}\n", idle_cause_name(c->cause), c->pct,
                       ms(static_cast<int64_t>(static_cast<double>(c->ns) / steps)), p.dim(cut(host, width - 34)));
  }
  if (causes.empty()) out += "  none\n";
  if (d.untraced_step_measured_ns && d.untraced_window_est_ns) {
    out += p.dim(wrap_text(
        fmt::format("untraced, a step took {} before the window opened (measured); of the idle, {} "
                    "per step is the tracer's",
                    ms(*d.untraced_step_measured_ns),
                    ms(static_cast<int64_t>(static_cast<double>(d.window_ns - *d.untraced_window_est_ns) / steps))),
        width, "  "));
  } else if (d.tracing_cost) {
    std::string line = fmt::format(
        "tracing adds {} per launch call here ({} -> {}, measured)", duration_text(d.tracing_cost->added_ns()),
        duration_text(d.tracing_cost->plain_launch_ns), duration_text(d.tracing_cost->traced_launch_ns));
    // The tracer's share of the idle, where it is worth a line (1% of the window or more).
    if (d.untraced_window_est_ns && d.window_ns - *d.untraced_window_est_ns >= d.window_ns / 100) {
      line +=
          fmt::format("; of the idle, {} per step is the tracer's: about {} per step untraced (est.)",
                      ms(static_cast<int64_t>(static_cast<double>(d.window_ns - *d.untraced_window_est_ns) / steps)),
                      ms(static_cast<int64_t>(static_cast<double>(*d.untraced_window_est_ns) / steps)));
    }
    out += p.dim(wrap_text(line, width, "  "));
  }

  out += "\n" + p.bold(fmt::format("Kernels {} · GPU time by category", d.kernel_count)) + "\n";
  for (const auto& c : d.categories) {
    if (c.ns == 0) continue;
    // Under 70 columns the launch count gives way to the bar.
    const std::string launches = width >= 70 ? fmt::format("  {:>7} launches", c.count) : "";
    out += fmt::format("  {:<15} {:>5.1f}%  {}  {:>10}/step{}\n", clip(c.category, 15), c.pct,
                       bar(c.pct, category_bar_cells(width)),
                       ms(static_cast<int64_t>(static_cast<double>(c.ns) / steps)), launches);
  }
  std::string launch = fmt::format("{:.0f}% of kernels under 10 us ({:.1f}% of kernel time)",
                                   d.launch.under_10us_count_pct, d.launch.under_10us_time_pct);
  if (d.launch.shorter_than_launch_pct)
    launch += fmt::format("; {:.0f}% shorter than their launch call", *d.launch.shorter_than_launch_pct);
  out += p.dim(wrap_text(launch, width, "  "));
  if (d.launch.launch_delay_median_us) {
    out += p.dim(wrap_text(fmt::format("launch call to kernel start: median {}, p90 {}",
                                       duration_text(*d.launch.launch_delay_median_us * 1e3),
                                       duration_text(d.launch.launch_delay_p90_us.value_or(0) * 1e3)),
                           width, "  "));
  }
  out += p.bold("Top kernels") + "\n";
  for (size_t i = 0; i < d.top_kernels.size() && i < 5; ++i) {
    const auto& k = d.top_kernels[i];
    out += fmt::format("  {:>5.1f}%  {:>6}x  {:<14} {}\n", k.pct, k.count, k.category, clip(k.name, width - 34));
  }

  if (!d.precision.empty()) {
    out += "\n" + p.bold("Precision of matrix math time (GEMM, convolution, attention)") + "\n";
    for (const auto& pr : d.precision) {
      out += fmt::format("  {:<8} {:>5.1f}%  {}\n", clip(pr.dtype, 8), pr.pct, bar(pr.pct, category_bar_cells(width)));
    }
  }

  if (!d.fusion.empty()) {
    out += "\n" + heading(p, "Fusion candidates", "  (recurring chains of memory-bound kernels; kernel time saved)",
                          static_cast<size_t>(width));
    for (size_t i = 0; i < d.fusion.size() && i < 3; ++i) {
      const auto& f = d.fusion[i];
      std::string chain;
      for (size_t k = 0; k < f.kernels.size(); ++k) chain += (k ? " → " : "") + f.kernels[k];
      out += fitted(
          fmt::format("  {:>4}x  {:>5.1f}% of the window  {} kernels  saves ~{}/step (est.)", f.occurrences, f.pct,
                      f.kernels.size(), ms(static_cast<int64_t>(static_cast<double>(f.est_saving_ns) / steps))),
          width, "         ");
      out += p.dim("         " + clip(chain, static_cast<size_t>(width) - 9)) + "\n";
    }
  }

  out += "\n" + heading(p, "Findings", "  (estimated speedup of the whole step if fixed)", static_cast<size_t>(width));
  if (d.findings.empty() && d.busy_pct < 0.05) {
    // A window with no kernel time (0.0% as shown above) has nothing on the GPU to tune.
    out += wrap_text(fmt::format("none: the GPU was idle for the whole window ({}); there is no GPU work here to "
                                 "speed up. The time went to the host (see Idle above): profile a window where the "
                                 "GPU works, after start-up, compilation and warm-up.",
                                 d.kernel_count == 0 ? "no kernels ran"
                                                     : fmt::format("{} kernel{} ran for under 0.05% of it",
                                                                   d.kernel_count, d.kernel_count == 1 ? "" : "s")),
                     width, "  ");
  } else if (d.findings.empty()) {
    out += "  none above the reporting thresholds\n";
  }
  render_findings(out, d.findings, p, width);
}

}  // namespace

TextStyle style_for(FILE* stream) {
  TextStyle s;
  if (isatty(fileno(stream))) {
    int columns = 0;
    winsize ws{};
    if (ioctl(fileno(stream), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
      columns = ws.ws_col;
    } else if (const char* env = std::getenv("COLUMNS"); env && *env) {
      columns = std::atoi(env);
    }
    if (columns > 0) s.width = std::clamp(columns, kMinTextWidth, kMaxTextWidth);
  }
  const char* no_color = std::getenv("NO_COLOR");
  s.color = isatty(fileno(stream)) && !(no_color && *no_color) && std::getenv("TERM") != nullptr &&
            std::string_view(std::getenv("TERM")) != "dumb";
  return s;
}

// One line per rank (ordered as analysed): step, busy with and without communication, exposed
// communication, MFU. Only when some device names its rank.
void render_rank_table(std::string& out, const std::vector<DeviceReport>& devices, const Painter& p) {
  if (std::none_of(devices.begin(), devices.end(), [](const DeviceReport& d) { return d.rank.has_value(); })) return;
  auto cell = [](std::optional<double> v, std::string_view unit) {
    return v ? fmt::format("{:.1f}{}", *v, unit) : std::string("n/a");
  };
  out += p.dim(fmt::format("  {:>5} {:>4} {:>10} {:>7} {:>10} {:>8} {:>6}", "rank", "gpu", "step", "busy", "w/o comm",
                           "exposed", "MFU")) +
         "\n";
  for (const DeviceReport& d : devices) {
    const CommunicationReport* c = d.communication ? &*d.communication : nullptr;
    out += fmt::format("  {:>5} {:>4} {:>10} {:>7} {:>10} {:>8} {:>6}\n", d.rank ? std::to_string(*d.rank) : "?",
                       d.device, cell(d.step_mean_ms, " ms"), cell(d.busy_pct, "%"),
                       cell(c ? std::optional(c->busy_without_comm_pct) : std::nullopt, "%"),
                       cell(c ? std::optional(c->exposed_pct) : std::nullopt, "%"), cell(d.mfu_pct, "%"));
  }
}

std::string render_report(const Report& report, const TextStyle& style) {
  Painter p{style.color};
  std::string out;
  for (size_t i = 0; i < report.devices.size(); ++i) {
    if (i) out += "\n" + std::string(static_cast<size_t>(style.width), '-') + "\n\n";
    render_device(out, report.devices[i], p, style.width);
  }
  if (report.ranks) {
    const auto& r = *report.ranks;
    out += "\n" + p.bold(fmt::format("Across {} ranks/devices", r.ranks)) + "\n";
    std::string line = fmt::format("busy {:.1f}% .. {:.1f}%", r.busy_min_pct, r.busy_max_pct);
    if (r.step_min_ms && r.step_max_ms) {
      line += fmt::format(" · step {:.2f} .. {:.2f} ms (slowest: {}; spread {:.0f}%)", *r.step_min_ms, *r.step_max_ms,
                          r.slowest, 100.0 * (*r.step_max_ms / *r.step_min_ms - 1.0));
    }
    out += wrap_text(line, static_cast<size_t>(style.width), "  ");
    render_rank_table(out, report.devices, p);
    render_findings(out, r.findings, p, style.width);
  }
  for (const std::string& w : report.without_gpu_work) {
    if (!out.empty()) out += "\n";
    out += p.bold("No GPU work") + "\n" + wrap_text(w, static_cast<size_t>(style.width), "  ");
  }
  return out;
}

}  // namespace gpuscope
