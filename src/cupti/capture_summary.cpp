// gpuscope-capture-summary: prints one JSON line of raw counts from a capture, independent of
// the analysis core (used by validation/run capture to compare a capture with what the traced
// program and the PyTorch profiler report). Not a user command.
//
// Usage: gpuscope-capture-summary CAPTURE [--skip-steps N]
// Counts events whose start lies inside the NVTX step ranges (after skipping the first N).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "core/steps.h"
#include "input/capture_reader.h"

using namespace gpuscope;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gpuscope-capture-summary CAPTURE [--skip-steps N]\n");
    return 2;
  }
  size_t skip = 0;
  for (int i = 2; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--skip-steps") skip = std::strtoul(argv[i + 1], nullptr, 10);
  auto t = read_capture_file(argv[1]);
  if (!t.ok()) {
    std::fprintf(stderr, "%s\n", t.status().message().c_str());
    return 2;
  }
  // Steps as the analysis finds them (the reader only decodes).
  const std::vector<Step> all_steps = detect_steps(*t, "").steps;
  std::vector<Step> steps(all_steps.begin() + static_cast<ptrdiff_t>(std::min(skip, all_steps.size())),
                          all_steps.end());
  auto in_steps = [&](int64_t ts) {
    for (const auto& s : steps)
      if (ts >= s.start_ns && ts < s.end_ns) return true;
    return false;
  };
  size_t kernels_in_steps = 0;
  std::map<std::string, size_t> by_name;
  for (const auto& k : t->kernels) {
    if (in_steps(k.start_ns)) ++kernels_in_steps;
    ++by_name[std::string(t->strings.view(k.name)).substr(0, 60)];
  }
  // Busy time: union of kernel intervals.
  std::vector<std::pair<int64_t, int64_t>> iv;
  for (const auto& k : t->kernels) iv.emplace_back(k.start_ns, k.end_ns);
  std::sort(iv.begin(), iv.end());
  int64_t busy = 0, cur_s = 0, cur_e = -1;
  for (auto [s, e] : iv) {
    if (s > cur_e) {
      if (cur_e > cur_s) busy += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (cur_e > cur_s) busy += cur_e - cur_s;
  double flops = 0, flops_in_steps = 0;
  size_t gemms = 0, gemms_in_steps = 0;
  std::map<std::string, double> flops_by_dtype;
  for (const auto& e : t->host_events) {
    if (e.kind != HostEventKind::kOp || e.num_matmuls == 0) continue;
    double f = 0;
    for (const Matmul& m : t->matmuls_of(e)) f += m.flops();
    flops_by_dtype[std::string(precision_name(t->matmuls_of(e).front().dtype))] += f;
    ++gemms;
    flops += f;
    if (in_steps(e.start_ns)) {
      ++gemms_in_steps;
      flops_in_steps += f;
    }
  }
  size_t annotations = 0;
  for (const auto& e : t->host_events) annotations += e.kind == HostEventKind::kAnnotation;
  std::printf(
      "{\"file\":\"%s\",\"kernels\":%zu,\"kernels_in_steps\":%zu,\"steps\":%zu,"
      "\"steps_counted\":%zu,\"memcpys\":%zu,\"memsets\":%zu,\"api_calls\":%zu,"
      "\"nvtx\":%zu,\"gemm_calls\":%zu,\"gemm_calls_in_steps\":%zu,\"gemm_flops\":%.6g,"
      "\"gemm_flops_in_steps\":%.6g,\"busy_ms\":%.3f,\"window_ms\":%.3f,\"devices\":%zu,"
      "\"device_samples\":%zu,\"warnings\":%zu,",
      argv[1], t->kernels.size(), kernels_in_steps, all_steps.size(), steps.size(), t->memcpys.size(),
      t->memsets.size(), t->api_calls.size(), annotations, gemms, gemms_in_steps, flops, flops_in_steps, busy / 1e6,
      iv.empty() ? 0.0 : (iv.back().second - iv.front().first) / 1e6, t->devices.size(), t->device_samples.size(),
      t->warnings.size());
  std::printf("\"flops_by_dtype\":{");
  bool first = true;
  for (const auto& [d, f] : flops_by_dtype) {
    std::printf("%s\"%s\":%.6g", first ? "" : ",", d.c_str(), f);
    first = false;
  }
  std::printf("},\"top_kernels\":{");
  std::vector<std::pair<size_t, std::string>> top;
  for (const auto& [n, c] : by_name) top.emplace_back(c, n);
  std::sort(top.rbegin(), top.rend());
  for (size_t i = 0; i < top.size() && i < 5; ++i) {
    std::string name;
    for (char c : top[i].second) name += (c == '"' || c == '\\') ? '_' : c;
    std::printf("%s\"%s\":%zu", i ? "," : "", name.c_str(), top[i].first);
  }
  std::printf("}}\n");
  for (const auto& w : t->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  return 0;
}
