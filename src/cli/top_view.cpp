#include "cli/top_view.h"

#include <algorithm>
#include <numeric>

#include <fmt/core.h>

#include "cli/live_common.h"
#include "render/text_layout.h"

namespace gpuscope::cli {
namespace {

constexpr size_t kNameNarrow = 12;
constexpr size_t kUserNarrow = 8;
constexpr size_t kJobNarrow = 16;
constexpr size_t kCommandMin = 8;
constexpr size_t kCommandWanted = 24;

std::string pct(const std::optional<double>& v) { return v ? fmt::format("{:.1f}%", *v) : "-"; }

std::string gib(const std::optional<uint64_t>& v) {
  return v ? fmt::format("{:.1f}", static_cast<double>(*v) / (1024.0 * 1024 * 1024)) : "-";
}

// At most `n` characters of valid UTF-8 `s`; a shortened one ends in "…".
std::string fit(const std::string& s, size_t n) {
  if (display_width(s) <= n) return s;
  if (n == 0) return "";
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool starts_char = (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    if (starts_char && ++chars > n - 1) break;
    out.push_back(s[i]);
  }
  return out + "…";
}

std::string pad(const std::string& s, size_t n, bool left) {
  const size_t w = display_width(s);
  if (w >= n) return s;
  return left ? s + std::string(n - w, ' ') : std::string(n - w, ' ') + s;
}

// One column of a table: its cells this frame, its width (the widest cell or the header, or
// less when narrowed: then cells are shortened with fit()).
struct Column {
  std::string header;
  bool left = false;
  std::vector<std::string> cells;
  size_t width = 0;
  bool shown = true;
  void measure() {
    width = display_width(header);
    for (const auto& c : cells) width = std::max(width, display_width(c));
  }
  void narrow(size_t n) { width = std::min(width, std::max(n, display_width(header))); }
};

size_t table_width(const std::vector<Column>& cols) {
  size_t w = 0, n = 0;
  for (const Column& c : cols) {
    if (!c.shown) continue;
    w += c.width;
    ++n;
  }
  return n ? w + n - 1 : 0;
}

std::string table_row(const std::vector<Column>& cols, size_t row) {
  std::string out;
  for (const Column& c : cols) {
    if (!c.shown) continue;
    if (!out.empty()) out += ' ';
    out += pad(fit(row == SIZE_MAX ? c.header : c.cells[row], c.width), c.width, c.left);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Larger first, a reading not measured last.
template <typename T>
bool larger(const std::optional<T>& a, const std::optional<T>& b) {
  if (a.has_value() != b.has_value()) return a.has_value();
  return a && *a > *b;
}

std::vector<size_t> gpu_order(const TopInput& in) {
  const auto& devs = in.snapshot->devices;
  std::vector<size_t> order(devs.size());
  std::iota(order.begin(), order.end(), 0);
  auto by = [&](auto key) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return larger(key(devs[a]), key(devs[b])); });
  };
  switch (in.sort) {
    case TopSort::kGpu:
      break;
    case TopSort::kUtil:
      by([](const DeviceSample& s) { return s.gpu_util_pct; });
      break;
    case TopSort::kSm:
      by([](const DeviceSample& s) { return s.sm_active_pct; });
      break;
    case TopSort::kMem:
      by([](const DeviceSample& s) { return s.memory_used_bytes; });
      break;
  }
  return order;
}

std::string device_id(const nvml::DeviceInfo& d) {
  return d.gpu_instance_id ? fmt::format("{}/{}", d.index, *d.gpu_instance_id) : fmt::format("{}", d.index);
}

// The GPU table: its header line and one line per GPU in `order`, fitted to `width`.
std::vector<std::string> gpu_table(const TopInput& in, const std::vector<size_t>& order, size_t width) {
  enum { kId, kName, kUtil, kSm, kTensor, kOcc, kDram, kMem, kPower, kTemp, kCount };
  std::vector<Column> cols(kCount);
  const char* headers[] = {"GPU", "NAME", "UTIL", "SM ACT", "TENSOR", "OCC", "DRAM", "MEM GiB", "POWER", "TEMP"};
  for (int c = 0; c < kCount; ++c) cols[c].header = headers[c];
  cols[kName].left = true;
  for (size_t i : order) {
    const DeviceSample& s = in.snapshot->devices[i];
    const nvml::DeviceInfo& d = (*in.devices)[i];
    cols[kId].cells.push_back(device_id(d));
    cols[kName].cells.push_back(terminal_safe(d.name));
    cols[kUtil].cells.push_back(pct(s.gpu_util_pct));
    cols[kSm].cells.push_back(pct(s.sm_active_pct));
    cols[kTensor].cells.push_back(pct(s.tensor_active_pct));
    cols[kOcc].cells.push_back(pct(s.sm_occupancy_pct));
    cols[kDram].cells.push_back(pct(s.dram_bw_pct));
    cols[kMem].cells.push_back(s.memory_total_bytes ? gib(s.memory_used_bytes) + "/" + gib(s.memory_total_bytes)
                                                    : gib(s.memory_used_bytes));
    cols[kPower].cells.push_back(s.power_w ? fmt::format("{:.0f} W", *s.power_w) : "-");
    cols[kTemp].cells.push_back(s.temperature_c ? fmt::format("{:.0f}C", *s.temperature_c) : "-");
  }
  for (Column& c : cols) c.measure();
  // The stated order (top_view.h).
  const int drops[] = {kTemp, kPower, kOcc, kDram, kName, kMem, kTensor};
  if (table_width(cols) > width) cols[kName].narrow(kNameNarrow);
  for (int c : drops) {
    if (table_width(cols) <= width) break;
    cols[static_cast<size_t>(c)].shown = false;
  }
  std::vector<std::string> lines{table_row(cols, SIZE_MAX)};
  for (size_t r = 0; r < order.size(); ++r) lines.push_back(table_row(cols, r));
  return lines;
}

// "    0 util ▁▂▃█  SM act ▁▁▂▂" under a GPU's row.
std::string history_line(const TopInput& in, size_t device, size_t width) {
  const nvml::DeviceInfo& d = (*in.devices)[device];
  const std::string head = fmt::format("{:>3} util ", device_id(d));
  const bool gpm = d.gpm_supported;
  const std::string sm_label = "  SM act ";
  const std::string no_gpm = "  SM act n/a (no GPM)";
  const size_t room = width > head.size() + 1 ? width - head.size() : 1;
  const size_t n = std::min(kTopHistory, gpm ? (room > sm_label.size() ? (room - sm_label.size()) / 2 : 0)
                                             : (room > no_gpm.size() ? room - no_gpm.size() : 0));
  if (n == 0) return "";
  std::string line = head + sparkline(in.history->util(device), n);
  return line + (gpm ? sm_label + sparkline(in.history->sm(device), n) : no_gpm);
}

std::vector<std::string> process_table(const TopInput& in, size_t width) {
  std::vector<const ProcessSample*> procs;
  for (const ProcessSample& p : in.snapshot->processes) procs.push_back(&p);
  auto by = [&](auto key) {
    std::stable_sort(procs.begin(), procs.end(),
                     [&](const ProcessSample* a, const ProcessSample* b) { return larger(key(*a), key(*b)); });
  };
  switch (in.sort) {
    case TopSort::kGpu:
      std::stable_sort(procs.begin(), procs.end(), [](auto* a, auto* b) { return a->device < b->device; });
      break;
    case TopSort::kUtil:
    case TopSort::kSm:
      by([](const ProcessSample& p) { return p.sm_util_pct; });
      break;
    case TopSort::kMem:
      by([](const ProcessSample& p) { return p.memory_used_bytes; });
      break;
  }
  enum { kGpu, kPid, kUser, kMem, kSm, kJob, kCommand, kCount };
  std::vector<Column> cols(kCount);
  const char* headers[] = {"GPU", "PID", "USER", "MEM GiB", "SM%", "POD / JOB", "COMMAND"};
  for (int c = 0; c < kCount; ++c) cols[c].header = headers[c];
  cols[kUser].left = cols[kJob].left = cols[kCommand].left = true;
  bool any_job = false;
  for (const ProcessSample* p : procs) {
    cols[kGpu].cells.push_back(fmt::format("{}", p->device));
    cols[kPid].cells.push_back(fmt::format("{}", p->pid));
    cols[kUser].cells.push_back(p->user.empty() ? "?" : terminal_safe(p->user));
    cols[kMem].cells.push_back(gib(p->memory_used_bytes));
    cols[kSm].cells.push_back(p->sm_util_pct ? fmt::format("{:.0f}", *p->sm_util_pct) : "-");
    cols[kJob].cells.push_back(terminal_safe(job_of(*p)));
    cols[kCommand].cells.push_back(p->command.empty() ? "?" : terminal_safe(p->command));
    any_job |= !job_of(*p).empty();
  }
  for (Column& c : cols) c.measure();
  if (!any_job) cols[kJob].shown = false;
  auto command_room = [&] {
    cols[kCommand].shown = false;
    const size_t rest = table_width(cols);
    cols[kCommand].shown = true;
    return width > rest + 1 ? width - rest - 1 : 0;
  };
  const size_t wanted = std::min(kCommandWanted, cols[kCommand].width);
  if (command_room() < wanted) cols[kUser].narrow(kUserNarrow);
  if (command_room() < wanted) cols[kJob].narrow(kJobNarrow);
  if (command_room() < wanted) cols[kJob].shown = false;
  const size_t room = command_room();
  if (room < std::min(kCommandMin, cols[kCommand].width)) {
    cols[kCommand].shown = false;
  } else {
    cols[kCommand].width = std::min(cols[kCommand].width, room);
  }
  std::vector<std::string> lines{table_row(cols, SIZE_MAX)};
  for (size_t r = 0; r < procs.size(); ++r) lines.push_back(table_row(cols, r));
  if (procs.empty()) lines.push_back("  (no compute processes)");
  return lines;
}

// The title pieces that fit, most important first, shown in their own order.
std::string title_line(const TopInput& in, size_t width) {
  const std::vector<std::string> pieces = {
      "gpuscope top",
      in.keys ? "q quits, s sorts" : "",
      fmt::format("{} GPU{}", in.devices->size(), in.devices->size() == 1 ? "" : "s"),
      fmt::format("sort: {}", top_sort_name(in.sort)),
      fmt::format("every {:.1f} s", in.interval_s),
      in.when,
      "driver " + terminal_safe(in.driver),
  };
  const size_t shown_order[] = {0, 2, 4, 3, 5, 6, 1};
  std::vector<bool> keep(pieces.size(), false);
  size_t used = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].empty()) continue;
    const size_t add = display_width(pieces[i]) + (used ? 2 : 0);
    if (used + add > width) continue;
    keep[i] = true;
    used += add;
  }
  std::string out;
  for (size_t i : shown_order) {
    if (!keep[i]) continue;
    out += (out.empty() ? "" : "  ") + pieces[i];
  }
  return out;
}

// `text` (already terminal-safe) word-wrapped to `width` characters.
std::vector<std::string> wrapped(std::string_view text, size_t width) {
  std::vector<std::string> out;
  std::string line;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t next = text.find(' ', pos);
    if (next == std::string_view::npos) next = text.size();
    const std::string word(text.substr(pos, next - pos));
    if (!line.empty() && display_width(line) + 1 + display_width(word) > width) {
      out.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    pos = next + 1;
  }
  if (!line.empty()) out.push_back(line);
  // A single word wider than the screen (a long path) is the one thing shortened here.
  for (std::string& l : out) {
    if (display_width(l) > width) l = fit(l, width);
  }
  return out;
}

}  // namespace

std::optional<TopSort> top_sort_from_name(std::string_view name) {
  for (size_t i = 0; i < std::size(kTopSortNames); ++i) {
    if (kTopSortNames[i] == name) return static_cast<TopSort>(i);
  }
  return std::nullopt;
}

void TopHistory::add(const nvml::LiveSnapshot& snap) {
  util_.resize(snap.devices.size());
  sm_.resize(snap.devices.size());
  for (size_t i = 0; i < snap.devices.size(); ++i) {
    util_[i].push_back(snap.devices[i].gpu_util_pct);
    sm_[i].push_back(snap.devices[i].sm_active_pct);
    if (util_[i].size() > kTopHistory) util_[i].pop_front();
    if (sm_[i].size() > kTopHistory) sm_[i].pop_front();
  }
}

std::string sparkline(const std::deque<std::optional<double>>& values, size_t n) {
  static constexpr const char* kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  std::string out;
  const size_t shown = std::min(n, values.size());
  for (size_t i = values.size() - shown; i < values.size(); ++i) {
    const auto& v = values[i];
    if (!v) {
      out += "·";
      continue;
    }
    const double clamped = std::clamp(*v, 0.0, 100.0);
    out += kBlocks[std::min<size_t>(7, static_cast<size_t>(clamped / 100.0 * 8.0))];
  }
  out.append(n - shown, ' ');
  return out;
}

std::vector<TopLine> render_top(const TopInput& in, size_t width, size_t height) {
  width = std::max<size_t>(width, 40);
  const std::vector<size_t> order = gpu_order(in);
  const std::vector<std::string> gpus = gpu_table(in, order, width);
  std::vector<std::string> history;
  for (size_t i : order) history.push_back(in.history && i < in.history->devices() ? history_line(in, i, width) : "");

  std::vector<std::string> no_gpm;
  std::string ids;
  for (const nvml::DeviceInfo& d : *in.devices) {
    if (!d.gpm_supported) ids += (ids.empty() ? "" : ", ") + device_id(d);
  }
  if (!ids.empty()) {
    no_gpm = wrapped(
        fmt::format("GPU {}: SM active, tensor, occupancy and DRAM activity are not available: NVML "
                    "measures them with GPM (GPU Performance Monitoring), which this GPU or its driver "
                    "does not offer (GPM needs a Hopper or newer GPU). Utilization there only says some kernel was "
                    "running, not how much of the GPU worked.",
                    ids),
        width);
  }
  std::vector<std::string> procs = process_table(in, width);
  std::vector<TopLine> signals;
  if (in.signals->empty()) {
    signals.push_back({"no waste signals", TopLine::kPlain});
  } else {
    signals.push_back({"WASTE SIGNALS", TopLine::kHeader});
    for (const Signal& sig : *in.signals) {
      for (const std::string& l : wrapped(describe_signal(sig), width)) signals.push_back({l, TopLine::kAlert});
    }
  }
  for (const std::string& w : in.warnings) {
    for (const std::string& l : wrapped("warning: " + terminal_safe(w), width)) signals.push_back({l, TopLine::kAlert});
  }

  // Rows: processes first, then history, then signals give way (top_view.h).
  bool show_history = true;
  size_t proc_rows = procs.size() - 1, signal_rows = signals.size();
  auto total = [&] {
    return 1 + gpus.size() + (show_history ? history.size() : 0) + no_gpm.size() + 1 + 1 + proc_rows +
           (proc_rows + 1 < procs.size() ? 1 : 0) + 1 + signal_rows + (signal_rows < signals.size() ? 1 : 0);
  };
  if (height > 0) {
    while (total() > height && proc_rows > 0) --proc_rows;
    if (total() > height) show_history = false;
    while (total() > height && signal_rows > 1) --signal_rows;
  }

  std::vector<TopLine> lines;
  lines.push_back({title_line(in, width), TopLine::kHeader});
  lines.push_back({gpus[0], TopLine::kHeader});
  for (size_t r = 0; r < order.size(); ++r) {
    const DeviceSample& s = in.snapshot->devices[order[r]];
    bool alert = false;
    for (const Signal& sig : *in.signals) alert |= sig.device == s.device && sig.gpu_instance_id == s.gpu_instance_id;
    lines.push_back({gpus[r + 1], alert ? TopLine::kAlert : TopLine::kPlain});
    if (show_history && !history[r].empty()) lines.push_back({history[r], TopLine::kPlain});
  }
  for (const std::string& l : no_gpm) lines.push_back({l, TopLine::kPlain});
  lines.push_back({"", TopLine::kPlain});
  lines.push_back({procs[0], TopLine::kHeader});
  for (size_t r = 0; r < proc_rows; ++r) lines.push_back({procs[r + 1], TopLine::kPlain});
  if (proc_rows + 1 < procs.size()) {
    std::string more = fmt::format("  +{} more processes", procs.size() - 1 - proc_rows);
    const std::string why = " (a taller window shows them)";
    if (display_width(more) + why.size() <= width) more += why;
    lines.push_back({more, TopLine::kPlain});
  }
  lines.push_back({"", TopLine::kPlain});
  for (size_t r = 0; r < signal_rows; ++r) lines.push_back(signals[r]);
  if (signal_rows < signals.size()) {
    lines.push_back({fmt::format("+{} more signal lines", signals.size() - signal_rows), TopLine::kAlert});
  }
  if (height > 0 && lines.size() > height) lines.resize(height);
  return lines;
}

}  // namespace gpuscope::cli
