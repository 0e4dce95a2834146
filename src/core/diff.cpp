#include "core/diff.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include <fmt/core.h>

namespace gpuscope {
namespace {

// Two FLOP counts per step within 1% are the same work (counts from shapes vary with nothing).
constexpr double kSameFlopsTolerance = 0.01;
// A precision row is a candidate for the headline only when its share of matrix time moved by
// more than this many points: with the same mix (bf16 -> bf16), a change in its time is a
// change of the kernels doing the math, which the categories name better.
constexpr double kPrecisionShiftPts = 5.0;

double steps_of(const DeviceReport& d) { return static_cast<double>(std::max<int64_t>(1, d.step_count)); }
double per_step_ms(int64_t ns, const DeviceReport& d) { return static_cast<double>(ns) / 1e6 / steps_of(d); }

double step_ms_of(const DeviceReport& d) {
  return d.step_mean_ms ? *d.step_mean_ms : static_cast<double>(d.window_ns) / 1e6 / steps_of(d);
}

bool is_hex_digit(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// Rows keyed by name on both sides, in first-seen order (BASE's, then NEW's).
template <typename Row, typename Key, typename Ns>
std::vector<ComponentChange> pair_rows(ComponentKind kind, const DeviceReport& base, const std::vector<Row>& b,
                                       const DeviceReport& now, const std::vector<Row>& n, Key key, Ns ns) {
  std::vector<ComponentChange> out;
  auto find = [&](const std::string& name) -> ComponentChange& {
    for (auto& c : out) {
      if (c.name == name) return c;
    }
    out.push_back(ComponentChange{kind, name, 0, 0});
    return out.back();
  };
  for (const Row& r : b) find(key(r)).base_ms += per_step_ms(ns(r), base);
  for (const Row& r : n) find(key(r)).new_ms += per_step_ms(ns(r), now);
  return out;
}

void sort_by_change(std::vector<ComponentChange>& rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return std::abs(a.delta_ms()) > std::abs(b.delta_ms()); });
}

std::string dominant_dtype(const DeviceReport& d) {
  const PrecisionTime* best = nullptr;
  for (const auto& p : d.precision) {
    if (!best || p.ns > best->ns) best = &p;
  }
  return best ? best->dtype : std::string();
}

double precision_pct(const DeviceReport& d, const std::string& dtype) {
  for (const auto& p : d.precision) {
    if (p.dtype == dtype) return p.pct;
  }
  return 0;
}

std::vector<KernelChange> kernel_changes(const DeviceReport& base, const DeviceReport& now) {
  std::map<std::string, KernelChange> by_name;
  for (const auto& k : base.top_kernels) {
    KernelChange& c = by_name[normalize_kernel_name(k.name)];
    c.base_ms = c.base_ms.value_or(0) + per_step_ms(k.ns, base);
    if (c.category.empty()) c.category = k.category;
  }
  for (const auto& k : now.top_kernels) {
    KernelChange& c = by_name[normalize_kernel_name(k.name)];
    c.new_ms = c.new_ms.value_or(0) + per_step_ms(k.ns, now);
    c.category = k.category;
  }
  std::vector<KernelChange> out;
  for (auto& [name, c] : by_name) {
    c.name = name;
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return std::abs(a.delta_ms()) > std::abs(b.delta_ms()); });
  if (out.size() > kMaxKernelChanges) out.resize(kMaxKernelChanges);
  return out;
}

std::vector<FindingChange> finding_changes(const std::vector<Finding>& base, const std::vector<Finding>& now) {
  std::map<std::string, FindingChange> by_id;
  for (const auto& f : base) {
    FindingChange& c = by_id[f.id];
    c.id = f.id;
    c.title = f.title;
    c.base_severity = f.severity;
    c.base_est_speedup = f.est_speedup;
  }
  for (const auto& f : now) {
    FindingChange& c = by_id[f.id];
    c.id = f.id;
    c.title = f.title;
    c.new_severity = f.severity;
    c.new_est_speedup = f.est_speedup;
  }
  std::vector<FindingChange> out;
  for (auto& [id, c] : by_id) {
    if (!c.new_severity) {
      c.status = FindingStatus::kResolved;
    } else if (!c.base_severity) {
      c.status = FindingStatus::kNew;
    } else {
      const bool speedup_moved =
          c.base_est_speedup.has_value() != c.new_est_speedup.has_value() ||
          (c.base_est_speedup && std::abs(*c.base_est_speedup - *c.new_est_speedup) > kFindingSpeedupTolerance);
      c.status =
          speedup_moved || c.base_severity != c.new_severity ? FindingStatus::kChanged : FindingStatus::kUnchanged;
    }
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.status < b.status; });
  return out;
}

bool same_flops(double a, double b) {
  return std::abs(a - b) <= kSameFlopsTolerance * std::max(std::abs(a), std::abs(b));
}

// Comparability: one line per reason the per-step numbers do not compare like for like.
void check_comparable(const DeviceReport& base, const DeviceReport& now, DeviceDiff& d) {
  auto warn = [&](std::string line) {
    d.comparable = false;
    d.warnings.push_back(std::move(line));
  };
  if (base.name != now.name) {
    warn(fmt::format("different devices ({} vs {}): the change includes the hardware", base.name, now.name));
  }
  if (base.step_source != now.step_source) {
    warn(fmt::format("steps defined differently ({} vs {}): step times may not measure the same unit of work",
                     base.step_source, now.step_source));
  } else if (base.step_source == "whole_window") {
    warn(
        "no steps found in either run: the whole window counts as one step, so windows of different length "
        "compare as different work");
  }
  auto flops_differ = [&](const char* kind, const std::optional<double>& b, const std::optional<double>& n) {
    if (!b || !n || same_flops(*b, *n)) return false;
    warn(
        fmt::format("{} FLOPs per step differ ({:.4g} vs {:.4g}, x{:.2f}): the runs do different work per step "
                    "(batch, sequence or model changed); compare throughput, not step time",
                    kind, *b, *n, *n / *b));
    return true;
  };
  if (!flops_differ("model", base.model_flops_per_step, now.model_flops_per_step)) {
    flops_differ("matmul", base.matmul_flops_per_step, now.matmul_flops_per_step);
  }
}

std::optional<HeadlineChange> headline_of(const DeviceReport& base, const DeviceReport& now, const DeviceDiff& d) {
  const ComponentChange* best = nullptr;
  auto consider = [&](const ComponentChange& c) {
    if (!best || std::abs(c.delta_ms()) > std::abs(best->delta_ms())) best = &c;
  };
  for (const auto& c : d.idle) consider(c);
  for (const auto& c : d.categories) consider(c);
  for (const auto& c : d.precision) {
    if (std::abs(precision_pct(now, c.name) - precision_pct(base, c.name)) > kPrecisionShiftPts) consider(c);
  }
  if (!best || best->delta_ms() == 0) return std::nullopt;
  HeadlineChange h;
  h.component = *best;
  h.step_time_ratio = d.step_time_ratio;
  if (const auto step_delta = d.step_ms.delta(); step_delta && *step_delta != 0) {
    h.share_of_step_change = best->delta_ms() / *step_delta;
  }
  h.base_dominant_dtype = dominant_dtype(base);
  h.new_dominant_dtype = dominant_dtype(now);
  return h;
}

}  // namespace

std::string normalize_kernel_name(std::string_view name) {
  std::string s;
  // Template arguments: everything inside balanced <...>.
  int depth = 0;
  for (char c : name) {
    if (c == '<') {
      ++depth;
    } else if (c == '>' && depth > 0) {
      --depth;
    } else if (depth == 0) {
      s += c;
    }
  }
  // The trailing parameter list, "(int, float*)"; a group in the middle ("(anonymous
  // namespace)::") is part of the name.
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  if (!s.empty() && s.back() == ')') {
    int level = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++level;
      if (s[i] == '(' && --level == 0) {
        if (i > 0) s.resize(i);  // A name that is only "(...)" stays as it is.
        break;
      }
    }
  }
  // Hexadecimal literals and whitespace runs; a leading "void " (the return type).
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool word_start = i == 0 || !(std::isalnum(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '_');
    if (word_start && s[i] == '0' && i + 2 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X') &&
        is_hex_digit(s[i + 2])) {
      i += 2;
      while (i + 1 < s.size() && is_hex_digit(s[i + 1])) ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(s[i]))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
      continue;
    }
    out += s[i];
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.rfind("void ", 0) == 0) out.erase(0, 5);
  return out.empty() ? std::string(name) : out;
}

DeviceDiff diff_devices(const DeviceReport& base, const DeviceReport& now) {
  DeviceDiff d;
  d.base_source = base.source;
  d.new_source = now.source;
  d.base_device = base.name;
  d.new_device = now.name;
  d.rank = now.rank ? now.rank : base.rank;
  d.base_step_source = base.step_source;
  d.new_step_source = now.step_source;
  d.base_steps = base.step_count;
  d.new_steps = now.step_count;
  check_comparable(base, now, d);

  d.step_ms = {step_ms_of(base), step_ms_of(now)};
  d.step_time_ratio = d.step_ms.ratio().value_or(0.0);
  d.model_flops_per_step = {base.model_flops_per_step, now.model_flops_per_step};
  d.matmul_flops_per_step = {base.matmul_flops_per_step, now.matmul_flops_per_step};
  const bool both_steps = d.step_ms.base && d.step_ms.now && *d.step_ms.now > 0;
  const double steps_per_time = both_steps ? finite_or_empty(*d.step_ms.base / *d.step_ms.now).value_or(0) : 0.0;
  if (auto r = d.model_flops_per_step.ratio()) {
    d.throughput_basis = "model_flops";
    d.throughput_ratio = finite_or_empty(*r * steps_per_time).value_or(0);
  } else if (auto m = d.matmul_flops_per_step.ratio()) {
    d.throughput_basis = "matmul_flops";
    d.throughput_ratio = finite_or_empty(*m * steps_per_time).value_or(0);
  } else {
    d.throughput_basis = "steps";
    d.throughput_ratio = steps_per_time;
  }

  d.mfu_pct = {base.mfu_pct, now.mfu_pct};
  d.hfu_pct = {base.hfu_pct, now.hfu_pct};
  d.busy_pct = {base.busy_pct, now.busy_pct};
  d.sm_active_est_pct = {base.sm_active_est_pct, now.sm_active_est_pct};
  d.hw_sm_active_pct = {base.hw_sm_active_pct, now.hw_sm_active_pct};
  d.hw_tensor_active_pct = {base.hw_tensor_active_pct, now.hw_tensor_active_pct};
  d.idle_pct = {base.idle_pct, now.idle_pct};
  d.kernels_per_step = {static_cast<double>(base.kernel_count) / steps_of(base),
                        static_cast<double>(now.kernel_count) / steps_of(now)};

  for (const IdleCauseInfo& info : kIdleCauseTable) {
    ComponentChange c{ComponentKind::kIdle, std::string(info.name), 0, 0};
    for (const auto& ic : base.idle_causes) {
      if (ic.cause == info.id) c.base_ms += per_step_ms(ic.ns, base);
    }
    for (const auto& ic : now.idle_causes) {
      if (ic.cause == info.id) c.new_ms += per_step_ms(ic.ns, now);
    }
    d.idle.push_back(std::move(c));
  }
  d.categories = pair_rows(
      ComponentKind::kCategory, base, base.categories, now, now.categories,
      [](const CategoryTime& c) { return c.category; }, [](const CategoryTime& c) { return c.ns; });
  for (auto& c : d.categories) {
    for (const auto& b : base.categories) {
      if (b.category == c.name)
        c.base_launches = c.base_launches.value_or(0) + static_cast<double>(b.count) / steps_of(base);
    }
    for (const auto& n : now.categories) {
      if (n.category == c.name)
        c.new_launches = c.new_launches.value_or(0) + static_cast<double>(n.count) / steps_of(now);
    }
  }
  sort_by_change(d.categories);
  d.precision = pair_rows(
      ComponentKind::kPrecision, base, base.precision, now, now.precision,
      [](const PrecisionTime& p) { return p.dtype; }, [](const PrecisionTime& p) { return p.ns; });
  sort_by_change(d.precision);
  d.kernels = kernel_changes(base, now);
  d.findings = finding_changes(base.findings, now.findings);
  d.headline = headline_of(base, now, d);
  return d;
}

ReportDiff diff_reports(const Report& base, const Report& now) {
  ReportDiff out;
  auto all_ranked = [](const Report& r) {
    return !r.devices.empty() &&
           std::all_of(r.devices.begin(), r.devices.end(), [](const DeviceReport& d) { return d.rank.has_value(); });
  };
  if (base.devices.size() > 1 && all_ranked(base) && all_ranked(now)) {
    std::set<int32_t> paired;
    for (const auto& b : base.devices) {
      auto n =
          std::find_if(now.devices.begin(), now.devices.end(), [&](const DeviceReport& d) { return d.rank == b.rank; });
      if (n == now.devices.end()) {
        out.warnings.push_back(fmt::format("rank {} ({}) is only in BASE", *b.rank, b.source));
        continue;
      }
      paired.insert(*b.rank);
      out.devices.push_back(diff_devices(b, *n));
    }
    for (const auto& n : now.devices) {
      if (!paired.count(*n.rank)) out.warnings.push_back(fmt::format("rank {} ({}) is only in NEW", *n.rank, n.source));
    }
    return out;
  }
  const size_t common = std::min(base.devices.size(), now.devices.size());
  for (size_t i = 0; i < common; ++i) out.devices.push_back(diff_devices(base.devices[i], now.devices[i]));
  if (base.devices.size() != now.devices.size()) {
    out.warnings.push_back(fmt::format("BASE has {} device report{}, NEW {}: compared the first {} in order",
                                       base.devices.size(), base.devices.size() == 1 ? "" : "s", now.devices.size(),
                                       common));
  }
  return out;
}

}  // namespace gpuscope
