#include "render/csv_report.h"

#include <vector>

#include <fmt/core.h>

#include "core/text.h"

namespace gpuscope {
namespace {

std::string ms(int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6); }
std::string pct(double v) { return fmt::format("{:.2f}", v); }

class Table {
 public:
  Table(const Report& report, std::vector<std::string_view> columns) : per_device_(report.devices.size() > 1) {
    if (per_device_) columns.insert(columns.begin(), {"source", "device"});
    row(columns);
  }
  // Starts each row of `d` with its source and device when the report has several devices.
  void device_row(const DeviceReport& d, std::vector<std::string> cells) {
    if (per_device_) {
      cells.insert(cells.begin(), {d.source, std::to_string(d.device)});
    }
    row(cells);
  }
  std::string text() && { return std::move(out_); }

 private:
  template <typename Cells>
  void row(const Cells& cells) {
    bool first = true;
    for (const auto& c : cells) {
      if (!first) out_ += ',';
      first = false;
      out_ += csv_field(c);
    }
    out_ += "\r\n";
  }
  bool per_device_;
  std::string out_;
};

}  // namespace

std::optional<CsvTable> csv_table_from_name(std::string_view name) {
  if (name == "steps") return CsvTable::kSteps;
  if (name == "kernels") return CsvTable::kKernels;
  if (name == "idle") return CsvTable::kIdle;
  return std::nullopt;
}

std::string csv_field(std::string_view raw) {
  const std::string text = terminal_safe(raw);
  if (text.find_first_of(",\"") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string report_to_csv(const Report& report, CsvTable table) {
  switch (table) {
    case CsvTable::kSteps: {
      Table t(report, {"number", "start_ms", "duration_ms", "busy_pct", "matmul_flops"});
      for (const DeviceReport& d : report.devices) {
        for (const StepReport& s : d.steps) {
          t.device_row(d, {std::to_string(s.number), ms(s.start_ns - d.window_start_ns), ms(s.duration_ns),
                           pct(s.busy_pct), s.matmul_flops ? fmt::format("{:.0f}", *s.matmul_flops) : ""});
        }
      }
      return std::move(t).text();
    }
    case CsvTable::kKernels: {
      Table t(report, {"name", "category", "count", "ms", "pct"});
      for (const DeviceReport& d : report.devices) {
        // Every kernel (a report read back from JSON has only its top kernels).
        for (const TopKernel& k : d.kernels.empty() ? d.top_kernels : d.kernels) {
          t.device_row(d, {k.name, k.category, std::to_string(k.count), ms(k.ns), pct(k.pct)});
        }
      }
      return std::move(t).text();
    }
    case CsvTable::kIdle: {
      Table t(report, {"cause", "ms", "pct", "ms_per_step", "top_host"});
      for (const DeviceReport& d : report.devices) {
        for (const IdleCause& c : d.idle_causes) {
          const std::string per_step =
              d.step_count > 0
                  ? fmt::format("{:.3f}", static_cast<double>(c.ns) / 1e6 / static_cast<double>(d.step_count))
                  : "";
          t.device_row(d, {std::string(idle_cause_name(c.cause)), ms(c.ns), pct(c.pct), per_step,
                           c.top_host.empty() ? "" : c.top_host.front().name});
        }
      }
      return std::move(t).text();
    }
  }
  return {};
}

}  // namespace gpuscope
