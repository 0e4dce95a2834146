#include "render/report_json.h"

#include <nlohmann/json.hpp>

namespace gpuscope {
namespace {

using nlohmann::json;

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

double us(int64_t ns) { return static_cast<double>(ns) / 1e3; }

// "K kernels running; idle: m memcpy, a alloc, ...": the letters of DeviceReport::timeline.
std::string timeline_legend() {
  std::string out = std::string(1, kTimelineKernelLetter) + " kernels running; idle:";
  for (const IdleCauseInfo& c : kIdleCauseTable) {
    out += std::string(&c == kIdleCauseTable ? " " : ", ") + c.letter + " " + std::string(c.name);
  }
  return out;
}

json findings_json(const std::vector<Finding>& list) {
  json findings = json::array();
  for (const auto& f : list) {
    json one = {{"id", f.id},
                {"severity", std::string(severity_name(f.severity))},
                {"title", f.title},
                {"evidence", f.evidence},
                {"est_speedup", opt(f.est_speedup)},
                {"recommendation", f.recommendation}};
    if (!f.est_speedup_of_fix.empty()) {
      json parts = json::object();
      for (const auto& [fix, speedup] : f.est_speedup_of_fix) parts[fix] = speedup;
      one["est_speedup_of_fix"] = std::move(parts);
    }
    findings.push_back(std::move(one));
  }
  return findings;
}

// Communication kernels (absent without any, which keeps other reports unchanged).
json communication_json(const CommunicationReport& c) {
  json collectives = json::array();
  for (const CollectiveStats& s : c.collectives) {
    collectives.push_back({{"op", s.op},
                           {"dtype", s.dtype.empty() ? json(nullptr) : json(s.dtype)},
                           {"group_size", opt(s.group_size)},
                           {"count", s.count},
                           {"us", us(s.ns)},
                           {"bytes", opt(s.bytes)},
                           {"algbw_gbps", opt(s.algbw_gbps)},
                           {"busbw_gbps", opt(s.busbw_gbps)}});
  }
  json per_step = json::array();
  for (int64_t ns : c.exposed_per_step_ns) per_step.push_back(us(ns));
  return {{"kernel_us", us(c.kernel_ns)},
          {"pct", c.pct},
          {"busy_without_comm_pct", c.busy_without_comm_pct},
          {"compute_us", us(c.compute_ns)},
          {"exposed_us", us(c.exposed_ns)},
          {"exposed_pct", c.exposed_pct},
          {"exposed_per_step_us", per_step},
          {"collectives", collectives}};
}

json device_json(const DeviceReport& d) {
  json j;
  j["source"] = d.source;
  j["rank"] = opt(d.rank);
  j["device"] = d.device;
  j["name"] = d.name;
  j["num_sms"] = opt(d.num_sms);
  j["window_us"] = us(d.window_ns);
  j["busy_pct"] = d.busy_pct;
  j["copy_pct"] = d.copy_pct;
  j["sm_active_est_pct"] = opt(d.sm_active_est_pct);
  j["sm_active_est_note"] = "estimate: kernel time weighted by min(1, blocks/SMs), capped at 1 per instant";
  j["hardware"] = {
      {"gpu_util_pct", opt(d.hw_gpu_util_pct)},
      {"sm_active_pct", opt(d.hw_sm_active_pct)},
      {"tensor_active_pct", opt(d.hw_tensor_active_pct)},
      {"sample_lag_ms", d.hw_sample_lag_ns ? json(static_cast<double>(*d.hw_sample_lag_ns) / 1e6) : json()}};

  json causes = json::array();
  int64_t idle_ns = 0;
  for (const auto& c : d.idle_causes) {
    json top = json::array();
    for (const auto& h : c.top_host) top.push_back({{"name", h.name}, {"us", us(h.ns)}});
    causes.push_back({{"cause", std::string(idle_cause_name(c.cause))},
                      {"us", us(c.ns)},
                      {"pct", c.pct},
                      {"tracing_us", c.tracing_ns ? json(us(*c.tracing_ns)) : json(nullptr)},
                      {"top_host", top}});
    idle_ns += c.ns;
  }
  j["idle"] = {{"total_pct", d.idle_pct}, {"total_us", us(idle_ns)}, {"causes", causes}};
  // What the tracer adds per launch call on the traced host (measured by `gpuscope run`), and
  // the window without the idle that explains: null where not measured.
  if (d.tracing_cost) {
    j["tracing_cost"] = {
        {"plain_launch_us", d.tracing_cost->plain_launch_ns / 1e3},
        {"traced_launch_us", d.tracing_cost->traced_launch_ns / 1e3},
        {"added_per_launch_us", d.tracing_cost->added_ns() / 1e3},
        {"untraced_window_est_us", d.untraced_window_est_ns ? json(us(*d.untraced_window_est_ns)) : json(nullptr)}};
  } else {
    j["tracing_cost"] = nullptr;
  }
  // The program's own untraced step, timed before a bounded window opened, and the window
  // estimated from it: null where not measured.
  if (d.untraced_step_measured_ns) {
    j["untraced"] = {{"step_measured_us", us(*d.untraced_step_measured_ns)},
                     {"window_est_us", d.untraced_window_est_ns ? json(us(*d.untraced_window_est_ns)) : json(nullptr)}};
  } else {
    j["untraced"] = nullptr;
  }
  j["timeline"] = {{"slices", d.timeline.size()},
                   {"slice_us", d.timeline.empty() ? 0.0 : us(d.window_ns) / static_cast<double>(d.timeline.size())},
                   {"states", d.timeline},
                   {"legend", timeline_legend()}};

  json cats = json::array();
  for (const auto& c : d.categories) {
    cats.push_back({{"category", c.category}, {"us", us(c.ns)}, {"pct", c.pct}, {"count", c.count}});
  }
  json top = json::array();
  for (const auto& k : d.top_kernels) {
    top.push_back({{"name", k.name}, {"category", k.category}, {"count", k.count}, {"us", us(k.ns)}, {"pct", k.pct}});
  }
  j["kernels"] = {
      {"count", d.kernel_count},
      {"categories", cats},
      {"top", top},
      {"under_10us",
       {{"count", d.launch.kernels_under_10us},
        {"count_pct", d.launch.under_10us_count_pct},
        {"time_pct", d.launch.under_10us_time_pct}}},
      {"shorter_than_launch",
       {{"count", opt(d.launch.shorter_than_launch)}, {"pct", opt(d.launch.shorter_than_launch_pct)}}},
      {"launch_delay_us",
       {{"median", opt(d.launch.launch_delay_median_us)}, {"p90", opt(d.launch.launch_delay_p90_us)}}},
  };

  json prec = json::array();
  for (const auto& p : d.precision) prec.push_back({{"dtype", p.dtype}, {"us", us(p.ns)}, {"pct", p.pct}});
  j["precision"] = prec;

  json fusion = json::array();
  for (const auto& f : d.fusion) {
    fusion.push_back({{"kernels", f.kernels},
                      {"occurrences", f.occurrences},
                      {"us", us(f.ns)},
                      {"pct", f.pct},
                      {"est_saving_us", us(f.est_saving_ns)}});
  }
  j["fusion"] = fusion;

  json steps = json::array();
  for (const auto& s : d.steps) {
    steps.push_back({{"number", s.number},
                     {"start_us", us(s.start_ns)},
                     {"duration_ms", static_cast<double>(s.duration_ns) / 1e6},
                     {"busy_pct", s.busy_pct},
                     {"matmul_flops", opt(s.matmul_flops)}});
  }
  j["steps"] = {{"source", d.step_source},
                {"count", d.step_count},
                {"skipped_warmup", d.steps_skipped_warmup},
                {"dropped_last", d.steps_dropped_last},
                {"mean_ms", opt(d.step_mean_ms)},
                {"list", steps},
                {"excluded_before_ms", static_cast<double>(d.excluded_before_ns) / 1e6},
                {"excluded_after_ms", static_cast<double>(d.excluded_after_ns) / 1e6}};
  j["flops"] = {{"matmul", opt(d.matmul_flops_per_step)},
                {"model", opt(d.model_flops_per_step)},
                {"per", "step"},
                {"model_formula", d.model_flops_formula.empty() ? json(nullptr) : json(d.model_flops_formula)},
                {"peak_tflops", opt(d.peak_tflops)},
                {"peak_basis", d.peak_basis.empty() ? json(nullptr) : json(d.peak_basis)}};
  j["mfu_pct"] = opt(d.mfu_pct);
  j["hfu_pct"] = opt(d.hfu_pct);
  if (d.serving) {  // Only when the steps are forward passes (keeps other reports unchanged).
    j["serving"] = {{"iterations_per_s", d.serving->iterations_per_s},
                    {"tokens_per_iteration_mean", opt(d.serving->tokens_per_iteration_mean)},
                    {"gpu_ms_per_iteration", d.serving->gpu_ms_per_iteration}};
  }
  if (d.communication) j["communication"] = communication_json(*d.communication);

  j["findings"] = findings_json(d.findings);
  return j;
}

}  // namespace

std::string report_to_json(const Report& report) {
  json j;
  j["schema"] = kReportSchema;
  json devices = json::array();
  for (const auto& d : report.devices) devices.push_back(device_json(d));
  j["devices"] = devices;
  if (report.ranks) {
    const auto& r = *report.ranks;
    j["ranks"] = {{"count", r.ranks},
                  {"busy_min_pct", r.busy_min_pct},
                  {"busy_max_pct", r.busy_max_pct},
                  {"step_min_ms", opt(r.step_min_ms)},
                  {"step_max_ms", opt(r.step_max_ms)},
                  {"step_median_ms", opt(r.step_median_ms)},
                  {"slowest", r.slowest.empty() ? json(nullptr) : json(r.slowest)},
                  {"findings", findings_json(r.findings)}};
    if (r.busy_without_comm_min_pct) {  // Only when some rank ran communication kernels.
      j["ranks"]["busy_without_comm_min_pct"] = *r.busy_without_comm_min_pct;
      j["ranks"]["busy_without_comm_max_pct"] = opt(r.busy_without_comm_max_pct);
    }
  } else {
    j["ranks"] = nullptr;
  }
  j["warnings"] = report.warnings;
  j["rejected"] = report.rejected;
  j["without_gpu_work"] = report.without_gpu_work;
  // Invalid UTF-8 in kernel names must not abort the dump.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace gpuscope
