#include "core/mfu.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <vector>

#include <fmt/core.h>

#include "core/catalog.h"
#include "core/flops.h"

namespace gpuscope {
namespace {

// Convolutions above this share of matrix-math time make HFU unavailable: their uncounted
// FLOPs would change it by more than the one decimal it is shown with, on any model where
// they cost at least as much per second as the matmuls.
constexpr double kUncountedConvShare = 0.01;

struct StepFlops {
  std::vector<double> per_step;
  bool any = false;  // Some matmul op had countable shapes.
};

// Matmul FLOPs per step, counted on the trace's host ops by start time. Nested matmul ops count
// once (the outermost): an op nested inside a counted one on the same thread is skipped.
StepFlops count_step_flops(const Trace& trace, const std::vector<Step>& step_list) {
  StepFlops out{std::vector<double>(step_list.size(), 0.0)};
  std::unordered_map<uint64_t, int64_t> counted_until;  // thread -> end of last counted op.
  for (const HostEvent& e : trace.host_events) {
    if (e.kind != HostEventKind::kOp || e.num_matmuls == 0) continue;
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(e.pid)) << 32) | static_cast<uint32_t>(e.tid);
    auto it = counted_until.find(key);
    if (it != counted_until.end() && e.start_ns < it->second) continue;
    const auto f = matmul_flops(trace, e);
    if (!f) continue;
    counted_until[key] = e.end_ns;
    for (size_t s = 0; s < step_list.size(); ++s) {
      if (e.start_ns >= step_list[s].start_ns && e.start_ns < step_list[s].end_ns) {
        out.per_step[s] += *f;
        out.any = true;
        break;
      }
    }
  }
  return out;
}

// One StepReport per step.
void add_step_reports(const DeviceContext& ctx, const std::vector<Step>& step_list, const StepFlops& flops,
                      DeviceReport& r) {
  for (size_t s = 0; s < step_list.size(); ++s) {
    const Step& st = step_list[s];
    StepReport sr;
    sr.number = st.number;
    sr.start_ns = st.start_ns;
    sr.duration_ns = st.end_ns - st.start_ns;
    sr.busy_pct = pct(covered(ctx.kernel_union, st.start_ns, st.end_ns), static_cast<double>(sr.duration_ns));
    if (flops.any) sr.matmul_flops = flops.per_step[s];
    r.steps.push_back(sr);
  }
}

void add_model_flops(const AnalysisOptions& options, DeviceReport& r) {
  if (options.flops_per_step) {
    r.model_flops_per_step = *options.flops_per_step;
    r.model_flops_formula = "given by --flops-per-step";
  } else if (options.model) {
    r.model_flops_per_step = options.model->flops_per_step();
    r.model_flops_formula = options.model->formula();
  }
}

// Peak: the dense rate of the 16-bit type the device trains in (bf16, or fp16 where it has no
// bf16 math: V100), fp8 when fp8 matrix math takes most of the matrix time on a device with fp8
// math; then MFU and HFU against it over the step time. The basis names the precision.
void add_peak_and_mfu(const AnalysisOptions& options, double step_ns, DeviceReport& r) {
  Precision peak_precision = preferred_half_precision(r.name).value_or(Precision::kBf16);
  if (!r.precision.empty() && r.precision.front().dtype == precision_name(Precision::kFp8) &&
      r.precision.front().pct >= 50 && device_supports(r.name, Precision::kFp8).value_or(false)) {
    peak_precision = Precision::kFp8;
  }
  if (options.peak_tflops) {
    r.peak_tflops = *options.peak_tflops;
    r.peak_basis = "given by --peak-tflops";
  } else if (const PeakTable* row = find_peak_table(r.name)) {
    r.peak_tflops = peak_tflops(r.name, peak_precision);
    if (r.peak_tflops) {
      r.peak_basis = fmt::format("{} {} dense ({})", row->variant, precision_name(peak_precision), row->source);
    }
  }
  if (r.peak_tflops && step_ns > 0) {
    const double peak_per_step = *r.peak_tflops * 1e12 * step_ns / 1e9;
    if (r.model_flops_per_step) r.mfu_pct = 100.0 * *r.model_flops_per_step / peak_per_step;
    if (r.matmul_flops_per_step) r.hfu_pct = 100.0 * *r.matmul_flops_per_step / peak_per_step;
  }
}

}  // namespace

void add_steps_and_mfu(const DeviceContext& ctx, const StepDetection& steps, const AnalysisOptions& options,
                       DeviceReport& r) {
  r.step_source = std::string(step_source_name(steps.source));
  r.steps_skipped_warmup = steps.skipped_warmup;
  // FLOPs are counted on the host steps (ops run on the host clock); the steps reported, and
  // the step time, are the device-timeline spans (DeviceContext::steps), whose mean is the
  // window over the step count: the header, the step list and the findings use one step set.
  std::vector<Step> host_steps = ctx.analysed_host_steps;
  std::vector<Step> device_steps = ctx.steps;
  r.steps_dropped_last = ctx.steps_dropped_last;
  if (host_steps.empty() || device_steps.size() != host_steps.size()) {
    host_steps = device_steps = {{ctx.window_start, ctx.window_end, 0}};
  }
  r.step_count = static_cast<int64_t>(device_steps.size());
  const StepFlops flops = count_step_flops(ctx.trace, host_steps);
  add_step_reports(ctx, device_steps, flops, r);
  const double step_ns = static_cast<double>(ctx.window()) / static_cast<double>(device_steps.size());
  r.step_mean_ms = step_ns / 1e6;
  r.excluded_before_ns = ctx.excluded_before_ns;
  r.excluded_after_ns = ctx.excluded_after_ns;
  if (flops.any) {
    r.matmul_flops_per_step =
        std::accumulate(flops.per_step.begin(), flops.per_step.end(), 0.0) / static_cast<double>(device_steps.size());
  }
  add_model_flops(options, r);
  add_peak_and_mfu(options, step_ns, r);
  // HFU counts the FLOPs of matmuls from their shapes; a convolution's depend on its stride,
  // padding and dilation, which the trace does not record. Where convolutions take a share of
  // the matrix time, the count misses their FLOPs and HFU would read low as if measured (0.0%
  // on a ResNet): not enough evidence, so no HFU.
  double matrix_ns = 0, conv_ns = 0;
  for (const Kernel* k : ctx.kernels) {
    const KernelCategory c = ctx.category_of(k->name);
    if (!is_matrix_math(c)) continue;
    matrix_ns += static_cast<double>(k->end_ns - k->start_ns);
    if (c == KernelCategory::kConvolution) conv_ns += static_cast<double>(k->end_ns - k->start_ns);
  }
  if (r.hfu_pct && conv_ns >= kUncountedConvShare * matrix_ns) {
    r.hfu_pct.reset();
    r.hfu_unavailable = fmt::format(
        "n/a: convolutions take {:.0f}% of the matrix time and their FLOPs are not "
        "counted (shapes alone do not give stride and padding)",
        pct(conv_ns, matrix_ns));
  }
}

}  // namespace gpuscope
