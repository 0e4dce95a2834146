// Per-trace checks on every recorded trace in testdata/hta and testdata/pytorch: the findings
// that must and must not appear given the trace's device and code (advice that fits the
// hardware, no compile advice for compiled kernels), how traces without GPU work are
// described, and which traces form one job. Only the kernel findings, the cross-rank summary
// and the rejection messages are asserted here; idle-cause findings have their own tests.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <future>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "core/analysis.h"
#include "core/catalog.h"
#include "core/findings.h"
#include "input/trace_input.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

std::string source_dir() {
  if (const char* env = std::getenv("GPUSCOPE_SOURCE_DIR")) return env;
  return GPUSCOPE_SOURCE_DIR;
}

Trace read(const std::string& rel) {
  auto t = read_trace_file((fs::path(source_dir()) / "testdata" / rel).string());
  EXPECT_TRUE(t.ok()) << rel << ": " << t.status().message();
  if (!t.ok()) return Trace{};
  Trace trace = std::move(t).value();
  trace.source = rel;
  return trace;
}

Report analyze_one(const std::string& rel) {
  std::vector<Trace> traces;
  traces.push_back(read(rel));
  return analyze_traces(traces, {});
}

const Finding* find(const DeviceReport& d, std::string_view id) {
  for (const Finding& f : d.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

bool mentions(const Finding& f, std::string_view word) {
  return f.title.find(word) != std::string::npos || f.evidence.find(word) != std::string::npos ||
         f.recommendation.find(word) != std::string::npos;
}

// The rules in findings_kernels.cpp: their wording is what this test holds to the device.
constexpr std::string_view kKernelFindings[] = {"precision-fp32", "kernel-fusion", "attention-unfused",
                                                "small-grid",     "low-occupancy", "optimizer-unfused"};

// What each trace with GPU work must show. `device`: the device name's kind; `precision`:
// whether precision-fp32 must fire (true), must not (false) or either (nullopt); `compiled`:
// the kernels are torch.compile/Triton output, so no kernel finding may advise torch.compile.
enum class Kind { kVolta, kAmpereHopper, kAmd, kUnknown };
struct Expect {
  Kind device;
  std::optional<bool> precision;
  bool compiled = false;
};

const std::map<std::string, Expect>& expectations() {
  static const std::map<std::string, Expect> m = {
      {"hta/amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz", {Kind::kAmd, std::nullopt}},
      {"hta/critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz", {Kind::kAmpereHopper, {}}},
      {"hta/critical_path_cuda_event_sync_event_sync_trace.json.gz", {Kind::kAmpereHopper, {}}},
      // fp32 GEMMs, but the GPU waits for the host 95% of the window: faster GEMMs save under 1%.
      {"hta/critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz", {Kind::kAmpereHopper, false}},
      {"hta/nccl_parser_config_nccl_data.json.gz", {Kind::kAmpereHopper, true}},
      {"hta/negative_queue_length_values_check_rank0.json.gz", {Kind::kAmpereHopper, true}},
      {"hta/ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", {Kind::kVolta, true}},
      {"hta/timeline_analysis_sampled_rank-0.json.gz", {Kind::kUnknown, true}},
      {"hta/trace_diff_control_control.json.gz", {Kind::kAmpereHopper, true}},
      {"hta/trace_diff_test_test.json.gz", {Kind::kVolta, true}},
      {"hta/triton_example_triton_example.json.gz", {Kind::kAmpereHopper, false, true}},
      {"pytorch/fp32_sync.json.gz", {Kind::kAmpereHopper, true}},
      {"pytorch/bf16_sync.json.gz", {Kind::kAmpereHopper, false}},
      {"pytorch/bf16_async.json.gz", {Kind::kAmpereHopper, false}},
      {"pytorch/bf16_compile.json.gz", {Kind::kAmpereHopper, false, true}},
      {"pytorch/h200_gemm_profiler_schedule.json.gz", {Kind::kAmpereHopper, false}},
  };
  return m;
}

// Every trace file is listed (with GPU work) or rejected below, so a new trace needs a row.
const std::map<std::string, std::vector<std::string>>& rejected_expectations() {
  static const std::map<std::string, std::vector<std::string>> m = {
      // CUPTI range-profiler run: launch calls and per-kernel counter ranges, no kernel records.
      {"hta/cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz",
       {"kernel launch calls", "range profiler", "A100"}},
      {"hta/cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", {"CPU events only", "no GPU"}},
      {"hta/rank_non_gpu_rank_non_gpu.json.gz", {"CPU events only", "no CUDA calls"}},
  };
  return m;
}

TEST(TraceFindings, EveryTraceHasExpectations) {
  for (const char* dir : {"hta", "pytorch"}) {
    for (const auto& e : fs::directory_iterator(fs::path(source_dir()) / "testdata" / dir)) {
      if (!e.path().string().ends_with(".json.gz")) continue;
      const std::string rel = std::string(dir) + "/" + e.path().filename().string();
      EXPECT_TRUE(expectations().contains(rel) || rejected_expectations().contains(rel))
          << rel << ": add its expected findings to trace_findings_test.cpp";
    }
  }
}

class PerTrace : public ::testing::TestWithParam<std::string> {};

TEST_P(PerTrace, FindingsFitTheDeviceAndCode) {
  const std::string rel = GetParam();
  const Expect& want = expectations().at(rel);
  const Report r = analyze_one(rel);
  ASSERT_EQ(r.devices.size(), 1u) << rel;
  EXPECT_TRUE(r.rejected.empty()) << rel;
  EXPECT_FALSE(r.ranks.has_value()) << rel << ": one trace is no job";
  const DeviceReport& d = r.devices[0];

  const Finding* precision = find(d, "precision-fp32");
  if (want.precision) EXPECT_EQ(precision != nullptr, *want.precision) << rel;

  for (const Finding& f : d.findings) {
    if (std::find(std::begin(kKernelFindings), std::end(kKernelFindings), f.id) == std::end(kKernelFindings)) {
      continue;
    }
    if (want.compiled) EXPECT_FALSE(mentions(f, "torch.compile(")) << rel << ": " << f.id << ": " << f.recommendation;
    switch (want.device) {
      case Kind::kVolta:
        // V100: no bf16 or TF32 math at all, so neither is advised (saying it lacks them is fine).
        EXPECT_FALSE(mentions(f, "torch.bfloat16") || f.title.find("bf16") != std::string::npos)
            << rel << ": " << f.id << ": " << f.recommendation;
        EXPECT_FALSE(mentions(f, "allow_tf32") || f.title.find("tf32") != std::string::npos ||
                     f.evidence.find("tf32") != std::string::npos)
            << rel << ": " << f.id << ": " << f.recommendation;
        break;
      case Kind::kAmd:
        EXPECT_FALSE(mentions(f, "nvidia-smi") || mentions(f, "-maxrregcount") || mentions(f, "CUDA graph"))
            << rel << ": " << f.id;
        break;
      case Kind::kUnknown:
        // Nothing device-specific for a device the catalogue does not know.
        EXPECT_FALSE(mentions(f, "dtype=torch.bfloat16") || mentions(f, "allow_tf32")) << rel << ": " << f.id;
        break;
      case Kind::kAmpereHopper:
        break;
    }
  }
  if (precision) {
    switch (want.device) {
      case Kind::kVolta:
        EXPECT_TRUE(mentions(*precision, "torch.float16")) << precision->recommendation;
        EXPECT_TRUE(mentions(*precision, "GradScaler")) << precision->recommendation;
        EXPECT_TRUE(mentions(*precision, "fp16 125"))
            << "ratio from the V100's own peaks: " << precision->recommendation;
        break;
      case Kind::kAmpereHopper:
        EXPECT_TRUE(mentions(*precision, "torch.bfloat16")) << precision->recommendation;
        break;
      case Kind::kUnknown:
        EXPECT_TRUE(mentions(*precision, "unknown device")) << precision->recommendation;
        break;
      case Kind::kAmd:
        break;
    }
  }
  // The peak is one the device has: V100 fp16 (so labelled), never a bf16 peak it lacks.
  if (want.device == Kind::kVolta) {
    ASSERT_TRUE(d.peak_tflops.has_value()) << rel;
    EXPECT_NE(d.peak_basis.find("fp16"), std::string::npos) << d.peak_basis;
  }
  if (want.device == Kind::kAmd) EXPECT_TRUE(is_amd_device(d.name)) << d.name;
}

std::vector<std::string> traces_with_gpu_work() {
  std::vector<std::string> out;
  for (const auto& [rel, e] : expectations()) out.push_back(rel);
  return out;
}

// Data loading is named only with evidence of it: DataLoader-like ranges in the trace (or, in
// captures, a data-loading frame in the Python stack samples). Host code without that evidence
// is the `host` cause, and its finding never advises DataLoader workers.
TEST_P(PerTrace, InputOnlyWithEvidenceOfDataLoading) {
  const std::string rel = GetParam();
  const Trace trace = read(rel);
  bool loader = false;
  for (const HostEvent& e : trace.host_events) {
    std::string name(trace.strings.view(e.name));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    loader |= name.find("dataloader") != std::string::npos || name.find("dataset") != std::string::npos;
  }
  const Report r = analyze_one(rel);
  ASSERT_EQ(r.devices.size(), 1u) << rel;
  const DeviceReport& d = r.devices[0];
  if (!loader) {
    EXPECT_EQ(find(d, "input-bound"), nullptr) << rel;
    for (const IdleCause& c : d.idle_causes) {
      if (c.cause == IdleCauseId::kInput) EXPECT_EQ(c.ns, 0) << rel;
    }
  }
  for (const Finding& f : d.findings) {
    if (f.id != "input-bound") EXPECT_FALSE(mentions(f, "num_workers")) << rel << " " << f.id;
  }
}

// One step set per report: the header's step time is the mean of the listed steps, and a
// finding that quotes the traced step quotes that one.
TEST_P(PerTrace, HeaderStepsAndFindingsAgree) {
  const std::string rel = GetParam();
  const Report r = analyze_one(rel);
  ASSERT_EQ(r.devices.size(), 1u) << rel;
  const DeviceReport& d = r.devices[0];
  ASSERT_TRUE(d.step_mean_ms.has_value()) << rel;
  ASSERT_EQ(static_cast<int64_t>(d.steps.size()), d.step_count) << rel;
  double sum_ms = 0;
  for (const StepReport& s : d.steps) {
    EXPECT_GT(s.duration_ns, 0) << rel << " step " << s.number;  // no truncated 0 ms step
    sum_ms += static_cast<double>(s.duration_ns) / 1e6;
  }
  EXPECT_NEAR(*d.step_mean_ms, sum_ms / static_cast<double>(d.steps.size()), 1e-6 * sum_ms) << rel;
  EXPECT_NEAR(sum_ms * 1e6, static_cast<double>(d.window_ns), 1.0 + 1e-9 * static_cast<double>(d.window_ns)) << rel;
  const std::string traced = fmt::format("(the traced step is {:.2f} ms", *d.step_mean_ms);
  for (const Finding& f : d.findings) {
    const size_t at = f.evidence.find("(the traced step is ");
    if (at != std::string::npos) EXPECT_EQ(f.evidence.substr(at, traced.size()), traced) << rel;
  }
}

INSTANTIATE_TEST_SUITE_P(Recorded, PerTrace, ::testing::ValuesIn(traces_with_gpu_work()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param.substr(0, info.param.find(".json"));
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

TEST(TraceFindings, TracesWithoutGpuWorkAreDescribedForWhatTheyHold) {
  for (const auto& [rel, words] : rejected_expectations()) {
    const Report r = analyze_one(rel);
    EXPECT_TRUE(r.devices.empty()) << rel;
    EXPECT_TRUE(r.rejected.empty()) << rel;  // Valid traces: described, not refused.
    ASSERT_EQ(r.without_gpu_work.size(), 1u) << rel;
    for (const auto& w : words) {
      EXPECT_NE(r.without_gpu_work[0].find(w), std::string::npos) << w << " in " << r.without_gpu_work[0];
    }
  }
  // The range-profiler run did launch kernels on a GPU: it is not called CPU-only.
  const Report cupti = analyze_one("hta/cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz");
  ASSERT_EQ(cupti.without_gpu_work.size(), 1u);
  EXPECT_EQ(cupti.without_gpu_work[0].find("CPU-only"), std::string::npos) << cupti.without_gpu_work[0];
}

// testdata/hta holds eleven unrelated traces with GPU work (four GPU models, several rank 0s):
// eleven separate analyses, no straggler, and a warning naming why.
TEST(TraceFindings, UnrelatedTracesAreNotOneJob) {
  std::vector<Trace> traces;
  for (const auto& e : fs::directory_iterator(fs::path(source_dir()) / "testdata" / "hta")) {
    if (e.path().string().ends_with(".json.gz")) traces.push_back(read("hta/" + e.path().filename().string()));
  }
  const Report r = analyze_traces(traces, {});
  EXPECT_EQ(r.devices.size(), 11u);
  EXPECT_EQ(r.without_gpu_work.size(), 3u);
  EXPECT_FALSE(r.ranks.has_value());
  std::string why;
  for (const auto& w : r.warnings) {
    if (w.find("not one job") != std::string::npos) why = w;
  }
  ASSERT_FALSE(why.empty());
  for (const char* reason :
       {"no rank and world size", "rank 0 appears", "world sizes differ", "device models differ", "do not overlap"}) {
    EXPECT_NE(why.find(reason), std::string::npos) << reason << " in " << why;
  }

  // --as-job combines them anyway (and still warns).
  AnalysisOptions as_job;
  as_job.as_job = true;
  const Report forced = analyze_traces(traces, as_job);
  ASSERT_TRUE(forced.ranks.has_value());
  EXPECT_EQ(forced.ranks->ranks, 11);
}

// An A100 run (rank 3 of 8) and a V100 run (rank 1 of 2), a week apart: no straggler.
TEST(TraceFindings, NoStragglerAcrossDifferentJobs) {
  std::vector<Trace> traces;
  traces.push_back(read("hta/trace_diff_control_control.json.gz"));
  traces.push_back(read("hta/trace_diff_test_test.json.gz"));
  const Report r = analyze_traces(traces, {});
  EXPECT_EQ(r.devices.size(), 2u);
  EXPECT_FALSE(r.ranks.has_value());
  ASSERT_FALSE(r.warnings.empty());
  const std::string& why = r.warnings.back();
  EXPECT_NE(why.find("world sizes differ (2, 8)"), std::string::npos) << why;
  EXPECT_NE(why.find("device models differ"), std::string::npos) << why;
}

// Two ranks of one job (the same trace as rank 0 and 1 of 2: same device, same time) agree.
TEST(TraceFindings, RanksThatAgreeAreOneJob) {
  std::vector<Trace> traces;
  for (int rank = 0; rank < 2; ++rank) {
    Trace t = read("pytorch/bf16_sync.json.gz");
    t.rank = rank;
    t.world_size = 2;
    t.source += "#" + std::to_string(rank);
    traces.push_back(std::move(t));
  }
  const Report r = analyze_traces(traces, {});
  ASSERT_TRUE(r.ranks.has_value());
  EXPECT_EQ(r.ranks->ranks, 2);
  for (const auto& w : r.warnings) EXPECT_EQ(w.find("not one job"), std::string::npos) << w;
}

// A printed number and half a unit of its last digit ("1.630" -> 1.63 +- 0.0005).
struct Printed {
  double value = 0, half_unit = 0;
};
Printed printed(const std::string& text) {
  const size_t dot = text.find('.');
  const size_t decimals = dot == std::string::npos ? 0 : text.size() - dot - 1;
  return {std::stod(text), 0.5 * std::pow(10.0, -static_cast<double>(decimals))};
}

// Every finding's multiplier can be recomputed from the numbers its evidence prints: the last
// "A ms -> B ms" of its estimate clause gives A / B (within the rounding of the printed digits;
// the multiplier as the text report shows it, two decimals), or a multiplier printed as "xN".
void expect_recomputable(const Finding& f, const std::string& where) {
  SCOPED_TRACE(where + ": " + f.id);
  ASSERT_TRUE(f.est_speedup);
  const size_t at = f.evidence.find(kEstimatePrefix);
  ASSERT_NE(at, std::string::npos) << f.evidence;
  const std::string clause = f.evidence.substr(at);
  static const std::regex kSteps(R"(([0-9]+\.[0-9]+) ms -> ([0-9]+\.[0-9]+) ms)");
  static const std::regex kTimes(R"(x([0-9]+\.[0-9]+))");
  std::smatch m;
  const double shown = std::round(*f.est_speedup * 100) / 100;  // As reports print it.
  if (std::regex_search(clause, m, kSteps)) {
    const Printed a = printed(m[1].str()), b = printed(m[2].str());
    ASSERT_GT(b.value - b.half_unit, 0) << clause;
    const double low = (a.value - a.half_unit) / (b.value + b.half_unit);
    const double high = (a.value + a.half_unit) / (b.value - b.half_unit);
    EXPECT_GE(shown + 0.005, low) << clause;
    EXPECT_LE(shown - 0.005, high) << clause;
  } else {
    ASSERT_TRUE(std::regex_search(clause, m, kTimes)) << clause;
    EXPECT_NEAR(printed(m[1].str()).value, shown, 0.005 + 1e-9) << clause;
  }
}

TEST(TraceFindings, EveryMultiplierFollowsFromItsEvidence) {
  const fs::path root = fs::path(source_dir()) / "testdata";
  std::vector<fs::path> inputs;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || e.path().parent_path().filename() == "golden") continue;
    if (name.ends_with(".json.gz") || name.ends_with(".gpuscope")) inputs.push_back(e.path());
  }
  // Each input read and analysed on its own thread (the captures take seconds in all); the
  // traces that name a rank are kept for the cross-rank findings of their folder.
  struct Result {
    std::vector<Finding> findings;
    std::optional<Trace> ranked;
  };
  std::vector<std::future<Result>> results;
  for (const fs::path& p : inputs) {
    results.push_back(std::async(std::launch::async, [p] {
      Result out;
      auto t = read_trace_file(p.string());
      if (!t.ok()) return out;
      std::vector<Trace> traces;
      traces.push_back(std::move(t).value());
      for (const DeviceReport& d : analyze_traces(traces, {}).devices) {
        out.findings.insert(out.findings.end(), d.findings.begin(), d.findings.end());
      }
      if (traces[0].rank) out.ranked = std::move(traces[0]);
      return out;
    }));
  }
  int findings = 0;
  std::map<fs::path, std::vector<Trace>> ranked_by_folder;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Result r = results[i].get();
    for (const Finding& f : r.findings) {
      expect_recomputable(f, inputs[i].string());
      ++findings;
    }
    if (r.ranked) ranked_by_folder[inputs[i].parent_path()].push_back(std::move(*r.ranked));
  }
  // Folders of ranks: the cross-rank findings too.
  for (const auto& [dir, traces] : ranked_by_folder) {
    if (traces.size() < 2) continue;
    const Report r = analyze_traces(traces, {});
    if (!r.ranks) continue;
    for (const Finding& f : r.ranks->findings) {
      expect_recomputable(f, dir.string());
      ++findings;
    }
  }
  EXPECT_GT(findings, 50);
}

}  // namespace
}  // namespace gpuscope
