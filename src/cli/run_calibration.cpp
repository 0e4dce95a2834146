#include "cli/run_calibration.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/run_captures.h"
#include "cli/run_process.h"
#include "core/run_protocol.h"

namespace gpuscope::cli {

Calibration calibrate_tracing(const std::string& tool, const std::string& inject) {
  Calibration out;
  std::string error;
  const std::string scratch = make_private_dir(temp_dir() + "/gpuscope-calibrate", &error);
  if (scratch.empty()) {
    out.note = "tracing cost not measured: " + error;
    return out;
  }
  auto measure = [&](const char* tag, std::vector<std::pair<std::string, std::string>> env) -> std::optional<double> {
    ChildSpec spec;
    spec.argv = {tool};
    spec.env = std::move(env);
    spec.stdout_path = scratch + "/" + tag + ".json";
    spec.stderr_path = scratch + "/" + tag + ".err";
    ChildResult r = run_child(spec);
    std::ifstream in(spec.stdout_path);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (r.exit_code == 0 && j.is_object() && j.contains("launch_ns") && j["launch_ns"].is_number())
      return j["launch_ns"].get<double>();
    std::string why = r.error;
    if (why.empty()) {
      std::ifstream err(spec.stderr_path);
      std::getline(err, why);
      if (why.rfind("gpuscope-calibrate: ", 0) == 0) why.erase(0, 20);
    }
    if (out.note.empty())
      out.note = fmt::format("tracing cost not measured ({} run of gpuscope-calibrate: {})", tag,
                             why.empty() ? fmt::format("exit code {}", r.exit_code) : why);
    return std::nullopt;
  };
  const std::optional<double> plain = measure("plain", {});
  std::optional<double> traced;
  if (plain) {
    traced = measure("traced", {{run_protocol::kEnvCudaInjection.name, inject},
                                {run_protocol::kEnvCapturePrefix.name, scratch + "/cal"}});
  }
  remove_private_dir(scratch);
  if (plain && traced) out.cost = TracingCost{*plain, *traced};
  return out;
}

}  // namespace gpuscope::cli
