#include "render/diff_json.h"

#include <nlohmann/json.hpp>

namespace gpuscope {
namespace {

using nlohmann::json;

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json change_json(const ValueChange& v) {
  return {{"base", opt(v.base)}, {"new", opt(v.now)}, {"delta", opt(v.delta())}, {"ratio", opt(v.ratio())}};
}

json component_json(const ComponentChange& c, const char* key) {
  return {{key, c.name},
          {"base_ms", c.base_ms},
          {"new_ms", c.new_ms},
          {"delta_ms", c.delta_ms()},
          {"ratio", opt(c.ratio())}};
}

json components_json(const std::vector<ComponentChange>& rows, const char* key) {
  json out = json::array();
  for (const auto& c : rows) out.push_back(component_json(c, key));
  return out;
}

json finding_side(const std::optional<Severity>& severity, const std::optional<double>& speedup) {
  if (!severity) return nullptr;
  return {{"severity", std::string(severity_name(*severity))}, {"est_speedup", opt(speedup)}};
}

json device_json(const DeviceDiff& d) {
  json j;
  j["base"] = {{"source", d.base_source},
               {"device", d.base_device},
               {"step_source", d.base_step_source},
               {"steps", d.base_steps}};
  j["new"] = {
      {"source", d.new_source}, {"device", d.new_device}, {"step_source", d.new_step_source}, {"steps", d.new_steps}};
  j["rank"] = opt(d.rank);
  j["comparable"] = d.comparable;
  j["warnings"] = d.warnings;
  j["per"] = "step";
  j["step_ms"] = change_json(d.step_ms);
  j["step_time_ratio"] = d.step_time_ratio;
  j["speedup"] = d.step_time_ratio > 0 ? json(1.0 / d.step_time_ratio) : json(nullptr);
  j["throughput"] = {{"ratio", d.throughput_ratio}, {"basis", d.throughput_basis}};
  j["flops_per_step"] = {{"model", change_json(d.model_flops_per_step)},
                         {"matmul", change_json(d.matmul_flops_per_step)}};
  j["mfu_pct"] = change_json(d.mfu_pct);
  j["hfu_pct"] = change_json(d.hfu_pct);
  j["busy_pct"] = change_json(d.busy_pct);
  j["sm_active_est_pct"] = change_json(d.sm_active_est_pct);
  j["hardware"] = {{"sm_active_pct", change_json(d.hw_sm_active_pct)},
                   {"tensor_active_pct", change_json(d.hw_tensor_active_pct)}};
  j["idle_pct"] = change_json(d.idle_pct);
  j["kernels_per_step"] = change_json(d.kernels_per_step);
  j["idle"] = components_json(d.idle, "cause");
  j["categories"] = components_json(d.categories, "category");
  for (size_t i = 0; i < d.categories.size(); ++i) {
    j["categories"][i]["base_launches"] = opt(d.categories[i].base_launches);
    j["categories"][i]["new_launches"] = opt(d.categories[i].new_launches);
  }
  j["precision"] = components_json(d.precision, "dtype");
  json kernels = json::array();
  for (const auto& k : d.kernels) {
    kernels.push_back({{"name", k.name},
                       {"category", k.category},
                       {"base_ms", opt(k.base_ms)},
                       {"new_ms", opt(k.new_ms)},
                       {"delta_ms", k.delta_ms()}});
  }
  j["kernels"] = kernels;
  json findings = json::array();
  for (const auto& f : d.findings) {
    findings.push_back({{"id", f.id},
                        {"status", std::string(finding_status_name(f.status))},
                        {"title", f.title},
                        {"base", finding_side(f.base_severity, f.base_est_speedup)},
                        {"new", finding_side(f.new_severity, f.new_est_speedup)}});
  }
  j["findings"] = findings;
  if (d.headline) {
    const auto& h = *d.headline;
    json c = component_json(h.component, "name");
    c["kind"] = std::string(component_kind_name(h.component.kind));
    c["step_time_ratio"] = h.step_time_ratio;
    c["share_of_step_change"] = opt(h.share_of_step_change);
    c["base_dominant_dtype"] = h.base_dominant_dtype.empty() ? json(nullptr) : json(h.base_dominant_dtype);
    c["new_dominant_dtype"] = h.new_dominant_dtype.empty() ? json(nullptr) : json(h.new_dominant_dtype);
    j["headline"] = c;
  } else {
    j["headline"] = nullptr;
  }
  return j;
}

}  // namespace

std::string diff_to_json(const ReportDiff& diff) {
  json j;
  j["schema"] = kDiffSchema;
  json devices = json::array();
  for (const auto& d : diff.devices) devices.push_back(device_json(d));
  j["devices"] = devices;
  j["warnings"] = diff.warnings;
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace gpuscope
