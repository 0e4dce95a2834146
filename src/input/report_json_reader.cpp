#include "input/report_json_reader.h"

#include <cctype>
#include <cmath>
#include <string_view>
#include <type_traits>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace gpuscope {
namespace {

using nlohmann::json;

// Thrown for values of the right type but no meaning (an unknown idle cause, a negative
// time, a number no run could produce).
struct BadValue {
  std::string message;
};

// Keys whose numbers may be negative: a step's start is a time on the trace's own clock.
bool may_be_negative(std::string_view key) { return key == "start_us"; }

// Every number read from a report: the writer never writes a negative one (but for
// may_be_negative keys) nor one beyond 1e30 (FLOPs per step included); such a value would turn
// into "inf%" or "-nan pts" downstream, so it is an error naming the key.
template <typename T>
T checked(std::string_view key, T value) {
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    const double v = static_cast<double>(value);
    if (!std::isfinite(v) || v > 1e30 || v < (may_be_negative(key) ? -1e30 : 0)) {
      throw BadValue{fmt::format("\"{}\" is {}: {}", key, v, v < 0 ? "negative" : "out of range")};
    }
  }
  return value;
}

// The writer's units back to the core's: it writes ns / 1e3 (us) and ns / 1e6 (ms) as doubles,
// which round-trip exactly, so rounding recovers the integer. Beyond 1e18 ns (31 years) is no
// time a trace holds, and would overflow the conversion.
int64_t ns_from(double value, double ns_per_unit, std::string_view unit) {
  const double ns = value * ns_per_unit;
  if (!(std::abs(ns) <= 1e18)) throw BadValue{fmt::format("a time of {} {} is out of range", value, unit)};
  return static_cast<int64_t>(std::llround(ns));
}
int64_t ns_from_us(double us) { return ns_from(us, 1e3, "us"); }
int64_t ns_from_ms(double ms) { return ns_from(ms, 1e6, "ms"); }

// A missing key or null is the default; a value of the wrong type throws (caught once, in
// report_from_json, and turned into a Status naming the key).
template <typename T>
T get(const json& j, const char* key, T fallback = T()) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return checked(key, it->get<T>());
}

template <typename T>
std::optional<T> opt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return checked(key, it->get<T>());
}

const json& child(const json& j, const char* key) {
  static const json kEmpty = json::object();
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? kEmpty : *it;
}

const json& list(const json& j, const char* key) {
  static const json kEmpty = json::array();
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? kEmpty : *it;
}

Severity severity_from(const std::string& name) {
  for (size_t i = 0; i < std::size(kSeverityNames); ++i) {
    if (kSeverityNames[i] == name) return static_cast<Severity>(i);
  }
  throw BadValue{fmt::format("unknown finding severity '{}'", name)};
}

std::vector<Finding> findings_from(const json& arr) {
  std::vector<Finding> out;
  for (const auto& f : arr) {
    Finding x;
    x.id = get<std::string>(f, "id");
    x.severity = severity_from(get<std::string>(f, "severity", "low"));
    x.title = get<std::string>(f, "title");
    x.evidence = get<std::string>(f, "evidence");
    x.est_speedup = opt<double>(f, "est_speedup");
    x.recommendation = get<std::string>(f, "recommendation");
    if (const auto parts = f.find("est_speedup_of_fix"); parts != f.end() && parts->is_object()) {
      for (const auto& [fix, speedup] : parts->items())
        if (speedup.is_number()) x.est_speedup_of_fix.emplace_back(fix, speedup.get<double>());
    }
    out.push_back(std::move(x));
  }
  return out;
}

CommunicationReport communication_from(const json& c) {
  CommunicationReport x;
  x.kernel_ns = ns_from_us(get<double>(c, "kernel_us"));
  x.pct = get<double>(c, "pct");
  x.busy_without_comm_pct = get<double>(c, "busy_without_comm_pct");
  x.compute_ns = ns_from_us(get<double>(c, "compute_us"));
  x.exposed_ns = ns_from_us(get<double>(c, "exposed_us"));
  x.exposed_pct = get<double>(c, "exposed_pct");
  for (const auto& u : list(c, "exposed_per_step_us")) {
    x.exposed_per_step_ns.push_back(ns_from_us(checked("exposed_per_step_us", u.get<double>())));
  }
  for (const auto& s : list(c, "collectives")) {
    CollectiveStats y;
    y.op = get<std::string>(s, "op");
    y.dtype = get<std::string>(s, "dtype");
    y.group_size = opt<int64_t>(s, "group_size");
    y.count = get<int64_t>(s, "count");
    y.ns = ns_from_us(get<double>(s, "us"));
    y.bytes = opt<uint64_t>(s, "bytes");
    y.algbw_gbps = opt<double>(s, "algbw_gbps");
    y.busbw_gbps = opt<double>(s, "busbw_gbps");
    x.collectives.push_back(std::move(y));
  }
  return x;
}

DeviceReport device_from(const json& j) {
  DeviceReport d;
  d.source = get<std::string>(j, "source");
  d.rank = opt<int32_t>(j, "rank");
  d.device = get<int32_t>(j, "device");
  d.name = get<std::string>(j, "name");
  d.num_sms = opt<int32_t>(j, "num_sms");
  d.window_ns = ns_from_us(get<double>(j, "window_us"));
  d.busy_pct = get<double>(j, "busy_pct");
  d.copy_pct = get<double>(j, "copy_pct");
  d.sm_active_est_pct = opt<double>(j, "sm_active_est_pct");
  const json& hw = child(j, "hardware");
  d.hw_gpu_util_pct = opt<double>(hw, "gpu_util_pct");
  d.hw_sm_active_pct = opt<double>(hw, "sm_active_pct");
  d.hw_tensor_active_pct = opt<double>(hw, "tensor_active_pct");

  const json& idle = child(j, "idle");
  d.idle_pct = get<double>(idle, "total_pct");
  for (const auto& c : list(idle, "causes")) {
    IdleCause x;
    const auto name = get<std::string>(c, "cause");
    const auto id = idle_cause_from_name(name);
    if (!id) throw BadValue{fmt::format("unknown idle cause '{}'", name)};
    x.cause = *id;
    x.ns = ns_from_us(get<double>(c, "us"));
    x.pct = get<double>(c, "pct");
    if (auto t = opt<double>(c, "tracing_us")) x.tracing_ns = ns_from_us(*t);
    for (const auto& h : list(c, "top_host"))
      x.top_host.push_back({get<std::string>(h, "name"), ns_from_us(get<double>(h, "us"))});
    d.idle_causes.push_back(std::move(x));
  }
  if (auto it = j.find("tracing_cost"); it != j.end() && !it->is_null()) {
    d.tracing_cost = TracingCost{get<double>(*it, "plain_launch_us") * 1e3, get<double>(*it, "traced_launch_us") * 1e3};
    if (auto u = opt<double>(*it, "untraced_window_est_us")) d.untraced_window_est_ns = ns_from_us(*u);
  }
  if (auto it = j.find("untraced"); it != j.end() && !it->is_null()) {
    d.untraced_step_measured_ns = ns_from_us(get<double>(*it, "step_measured_us"));
    if (auto u = opt<double>(*it, "window_est_us")) d.untraced_window_est_ns = ns_from_us(*u);
  }
  d.timeline = get<std::string>(child(j, "timeline"), "states");

  const json& k = child(j, "kernels");
  d.kernel_count = get<int64_t>(k, "count");
  for (const auto& c : list(k, "categories")) {
    d.categories.push_back({get<std::string>(c, "category"), ns_from_us(get<double>(c, "us")), get<double>(c, "pct"),
                            get<int64_t>(c, "count")});
  }
  for (const auto& t : list(k, "top")) {
    d.top_kernels.push_back({get<std::string>(t, "name"), get<std::string>(t, "category"), get<int64_t>(t, "count"),
                             ns_from_us(get<double>(t, "us")), get<double>(t, "pct")});
  }
  const json& small = child(k, "under_10us");
  d.launch.kernels_under_10us = get<int64_t>(small, "count");
  d.launch.under_10us_count_pct = get<double>(small, "count_pct");
  d.launch.under_10us_time_pct = get<double>(small, "time_pct");
  const json& shorter = child(k, "shorter_than_launch");
  d.launch.shorter_than_launch = opt<int64_t>(shorter, "count");
  d.launch.shorter_than_launch_pct = opt<double>(shorter, "pct");
  const json& delay = child(k, "launch_delay_us");
  d.launch.launch_delay_median_us = opt<double>(delay, "median");
  d.launch.launch_delay_p90_us = opt<double>(delay, "p90");

  for (const auto& p : list(j, "precision")) {
    d.precision.push_back({get<std::string>(p, "dtype"), ns_from_us(get<double>(p, "us")), get<double>(p, "pct")});
  }
  for (const auto& f : list(j, "fusion")) {
    FusionCandidate x;
    x.kernels = get<std::vector<std::string>>(f, "kernels");
    x.occurrences = get<int64_t>(f, "occurrences");
    x.ns = ns_from_us(get<double>(f, "us"));
    x.pct = get<double>(f, "pct");
    x.est_saving_ns = ns_from_us(get<double>(f, "est_saving_us"));
    d.fusion.push_back(std::move(x));
  }

  const json& steps = child(j, "steps");
  d.step_source = get<std::string>(steps, "source");
  d.step_count = get<int64_t>(steps, "count");
  d.steps_skipped_warmup = get<int64_t>(steps, "skipped_warmup");
  d.steps_dropped_last = get<int64_t>(steps, "dropped_last");
  d.step_mean_ms = opt<double>(steps, "mean_ms");
  d.excluded_before_ns = ns_from_ms(get<double>(steps, "excluded_before_ms"));
  d.excluded_after_ns = ns_from_ms(get<double>(steps, "excluded_after_ms"));
  for (const auto& s : list(steps, "list")) {
    d.steps.push_back({get<int64_t>(s, "number"), ns_from_us(get<double>(s, "start_us")),
                       ns_from_ms(get<double>(s, "duration_ms")), get<double>(s, "busy_pct"),
                       opt<double>(s, "matmul_flops")});
  }

  const json& flops = child(j, "flops");
  d.matmul_flops_per_step = opt<double>(flops, "matmul");
  d.model_flops_per_step = opt<double>(flops, "model");
  d.model_flops_formula = get<std::string>(flops, "model_formula");
  d.peak_tflops = opt<double>(flops, "peak_tflops");
  d.peak_basis = get<std::string>(flops, "peak_basis");
  d.mfu_pct = opt<double>(j, "mfu_pct");
  d.hfu_pct = opt<double>(j, "hfu_pct");
  if (auto it = j.find("communication"); it != j.end() && !it->is_null()) d.communication = communication_from(*it);
  d.findings = findings_from(list(j, "findings"));
  return d;
}

}  // namespace

bool looks_like_report_json(std::string_view head) {
  size_t i = 0;
  auto skip_space = [&] {
    while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  };
  skip_space();
  if (i >= head.size() || head[i] != '{') return false;
  ++i;
  skip_space();
  const std::string_view rest = head.substr(i);
  return rest.rfind("\"devices\"", 0) == 0 || rest.rfind("\"schema\"", 0) == 0;
}

StatusOr<Report> report_from_json(std::string_view text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return Status::error(fmt::format("not valid JSON at byte {}: {}", e.byte, e.what()));
  }
  if (!j.is_object()) return Status::error("not a gpuscope report: expected a JSON object");
  const auto schema = j.find("schema");
  if (schema == j.end() || !schema->is_string()) {
    return Status::error(fmt::format("not a gpuscope report: no \"schema\" key (expected {})", kReportSchema));
  }
  if (schema->get<std::string>() != kReportSchema) {
    return Status::error(fmt::format("report schema {} is not supported (this gpuscope reads {})",
                                     schema->get<std::string>(), kReportSchema));
  }
  Report r;
  try {
    for (const auto& d : list(j, "devices")) r.devices.push_back(device_from(d));
    if (auto it = j.find("ranks"); it != j.end() && !it->is_null()) {
      RankSummary s;
      s.ranks = get<int64_t>(*it, "count");
      s.busy_min_pct = get<double>(*it, "busy_min_pct");
      s.busy_max_pct = get<double>(*it, "busy_max_pct");
      s.step_min_ms = opt<double>(*it, "step_min_ms");
      s.step_max_ms = opt<double>(*it, "step_max_ms");
      s.step_median_ms = opt<double>(*it, "step_median_ms");
      s.slowest = get<std::string>(*it, "slowest");
      s.busy_without_comm_min_pct = opt<double>(*it, "busy_without_comm_min_pct");
      s.busy_without_comm_max_pct = opt<double>(*it, "busy_without_comm_max_pct");
      s.findings = findings_from(list(*it, "findings"));
      r.ranks = std::move(s);
    }
    r.warnings = get<std::vector<std::string>>(j, "warnings");
    r.rejected = get<std::vector<std::string>>(j, "rejected");
    if (j.contains("without_gpu_work")) r.without_gpu_work = get<std::vector<std::string>>(j, "without_gpu_work");
  } catch (const json::exception& e) {
    // nlohmann's type errors name the expected and actual type, not the key: good enough to
    // say the file is not what this version writes.
    return Status::error(fmt::format("not a valid {} report: {}", kReportSchema, e.what()));
  } catch (const BadValue& e) {
    return Status::error(fmt::format("not a valid {} report: {}; write it again with gpuscope analyze --json",
                                     kReportSchema, e.message));
  }
  if (r.devices.empty()) return Status::error("the report has no devices: nothing to compare");
  return r;
}

}  // namespace gpuscope
