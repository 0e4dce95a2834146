#include "cli/run_try.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/run_process.h"
#include "core/analysis.h"
#include "core/diff.h"
#include "core/run_protocol.h"
#include "core/text.h"
#include "input/capture_reader.h"
#include "render/html_diff.h"
#include "render/output_file.h"
#include "render/text_layout.h"

namespace gpuscope::cli {
namespace {

using Json = nlohmann::ordered_json;

// The as-is runs' drift beyond which the report says speedups that small are not resolved.
constexpr double kDriftResolved = 0.02;

constexpr const char* kAsIsAgain = "as is, again";

std::string file_stem(const std::string& label) {
  return label == "as is" ? "as-is" : label == kAsIsAgain ? "as-is-again" : label;
}

std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last.size() > 200 ? last.substr(0, 200) + "..." : last;
}

std::string fmt_step(double ns) { return fmt::format("{:.2f} ms/step", ns / 1e6); }

// `round` > 1 names the files of a later round's run apart (tf32.2.gpuscope).
TrialRun run_trial(const TryRequest& r, const std::string& label, std::vector<const TrialFix*> fixes, int index,
                   int total, int round = 1) {
  TrialRun run;
  run.label = label;
  run.fixes = std::move(fixes);
  const std::string stem =
      r.output_dir + "/" + file_stem(label) + (round > 1 ? fmt::format(".{}", round) : std::string());
  run.capture = stem + ".gpuscope";
  run.log = stem + ".log";
  const std::string result = stem + ".result.json";

  ChildSpec spec;
  spec.argv = {r.runner,
               "run",
               "--no-report",
               "--no-calibrate",
               "--steps",
               std::to_string(r.traced_steps),
               "--skip-steps",
               std::to_string(r.warmup + r.steps),
               "-o",
               run.capture,
               "--"};
  spec.argv.insert(spec.argv.end(), r.command.begin(), r.command.end());
  std::string python_fixes;
  for (const TrialFix* f : run.fixes) {
    if (f->env_name.empty()) {
      python_fixes += (python_fixes.empty() ? "" : ",") + std::string(f->name);
    } else if (f->name == "caching-allocator") {
      spec.unset_env.emplace_back(f->env_name);
    } else if (f->name == "expandable-segments") {
      const char* old = std::getenv("PYTORCH_CUDA_ALLOC_CONF");
      spec.env.emplace_back(f->env_name, old && *old ? std::string(old) + ",expandable_segments:True"
                                                     : std::string("expandable_segments:True"));
    }
  }
  spec.env.emplace_back(run_protocol::kEnvTry.name, python_fixes);
  spec.env.emplace_back(run_protocol::kEnvTryResult.name, result);
  spec.env.emplace_back(run_protocol::kEnvTryWarmup.name, std::to_string(r.warmup));
  spec.stdout_path = stem + ".out";
  spec.stderr_path = run.log;
  const std::string at = total > 0 ? fmt::format("[{}/{}]", index, total) : fmt::format("[{}]", index);
  const std::string shown = label + (round > 1 ? fmt::format(" (round {})", round) : std::string());
  fmt::print(stderr, "gpuscope run --try: {} {}: running ({} + {} steps)\n", at, terminal_safe(shown), r.warmup,
             r.steps);
  const auto started = std::chrono::steady_clock::now();
  const ChildResult child = run_child(spec);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  run.exit_code = child.exit_code;
  if (!child.error.empty()) {
    run.error = child.error;
  } else if (read_trial_result(result, &run)) {
    if (static_cast<int>(run.step_ns.size()) < std::min(r.steps, 3))
      run.error = fmt::format("only {} steps were timed", run.step_ns.size());
  } else if (child.exit_code != 0) {
    const std::string why = last_line(run.log);
    run.error = fmt::format("the program exited with {} before its steps were timed{}{}", child.exit_code,
                            why.empty() ? "" : ": ", why);
  } else {
    run.error = fmt::format(
        "the program ended before {} steps (warm-up and timed): it needs optimizer steps, "
        "a step loop (Python 3.12+) or CUDA-graph replays",
        r.warmup + r.steps);
  }
  struct stat st {};
  if (::stat(run.capture.c_str(), &st) != 0) run.capture.clear();
  if (run.error.empty()) {
    fmt::print(stderr, "gpuscope run --try: {} {}: {} ({} clock, {:.0f} s)\n", at, terminal_safe(shown),
               fmt_step(*median_ns(run.step_ns)), run.clock, took_s);
  } else {
    fmt::print(stderr, "gpuscope run --try: {} {}: no measurement: {} (log: {})\n", at, terminal_safe(shown),
               terminal_safe(run.error), terminal_safe(run.log));
  }
  return run;
}

// The best estimate among the as-is findings a fix follows; the finding's id with it.
// A finding whose estimate assumes more than the fix does (precision-fp32's move to bf16, for
// tf32) gives the fix's own estimate where it has one (`part` names it).
struct Estimate {
  double speedup = 0;
  std::string finding;
  std::string part;
};
std::optional<Estimate> estimate_for(const Report& as_is, const std::vector<const TrialFix*>& fixes) {
  std::optional<Estimate> best;
  for (const TrialFix* fix : fixes) {
    for (const auto& d : as_is.devices) {
      for (const auto& f : d.findings) {
        if (!f.est_speedup) continue;
        if (std::find(fix->findings.begin(), fix->findings.end(), f.id) == fix->findings.end()) continue;
        Estimate e{*f.est_speedup, f.id, ""};
        for (const auto& [name, speedup] : f.est_speedup_of_fix) {
          if (name == fix->name) e = Estimate{speedup, f.id, fmt::format("{} alone", name)};
        }
        if (!best || e.speedup > best->speedup) best = e;
      }
    }
  }
  return best;
}

std::optional<Report> analyze_capture(const std::string& path) {
  if (path.empty()) return std::nullopt;
  auto trace = read_capture_file(path);
  if (!trace.ok()) {
    fmt::print(stderr, "gpuscope run --try: {}\n", terminal_safe(trace.status().message()));
    return std::nullopt;
  }
  std::vector<Trace> traces;
  traces.push_back(std::move(trace).value());
  Report report = analyze_traces(traces, AnalysisOptions{});
  if (report.devices.empty()) return std::nullopt;
  return report;
}

struct Row {
  const TrialRun* run = nullptr;
  std::optional<TrialSpeedup> measured;
  std::optional<Estimate> estimate;
  std::optional<LossComparison> losses;
  std::string not_applied;
};

Json row_json(const Row& row) {
  Json j;
  j["label"] = row.run->label;
  Json fixes = Json::array();
  for (const TrialFix* f : row.run->fixes) fixes.push_back(std::string(f->name));
  j["fixes"] = fixes;
  j["applied"] = row.not_applied.empty();
  j["not_applied"] = row.not_applied.empty() ? Json() : Json(row.not_applied);
  j["error"] = row.run->error.empty() ? Json() : Json(row.run->error);
  j["step_ms_median"] = row.measured ? Json(row.measured->after_median_ns / 1e6) : Json();
  j["steps_timed"] = static_cast<int64_t>(row.run->step_ns.size());
  j["clock"] = row.run->clock.empty() ? Json() : Json(row.run->clock);
  j["step_ms_mean"] = row.measured ? Json(row.measured->after_mean_ns / 1e6) : Json();
  j["statistic"] = row.measured ? Json(std::string(statistic_name(row.measured->statistic))) : Json();
  j["speedup"] = row.measured ? Json(row.measured->speedup) : Json();
  j["speedup_median"] = row.measured ? Json(row.measured->median_speedup) : Json();
  j["speedup_mean"] = row.measured ? Json(row.measured->mean_speedup) : Json();
  j["speedup_interval_95"] = row.measured ? Json::array({row.measured->low, row.measured->high}) : Json();
  j["estimated_speedup"] = row.estimate ? Json(row.estimate->speedup) : Json();
  j["estimate_finding"] = row.estimate ? Json(row.estimate->finding) : Json();
  bool numerics = false;
  for (const TrialFix* f : row.run->fixes) numerics = numerics || f->numerics;
  j["changes_numerics"] = numerics;
  if (row.losses) {
    j["losses"] = {{"compared", row.losses->compared},
                   {"max_relative_diff", row.losses->max_relative_diff},
                   {"as_is_last", row.losses->before_last},
                   {"tried_last", row.losses->after_last}};
  } else {
    j["losses"] = Json();
  }
  j["capture"] = row.run->capture.empty() ? Json() : Json(row.run->capture);
  j["log"] = row.run->log;
  return j;
}

void print_row(const Row& row) {
  const TrialRun& run = *row.run;
  const std::string pad(23, ' ');
  // The label, then `text` wrapped to 80 columns beside it (continuation lines under it).
  auto beside = [&](const std::string& text) {
    std::string wrapped = wrap_text(text, 80, pad);
    fmt::print("  {:<20} {}", terminal_safe(run.label), wrapped.substr(std::min(wrapped.size(), pad.size())));
    if (wrapped.empty() || wrapped.back() != '\n') fmt::print("\n");
  };
  if (!run.error.empty()) {
    beside("no measurement: " + run.error);
    return;
  }
  if (!row.not_applied.empty()) {
    std::string why = row.not_applied;
    if (run.fixes.size() == 1 && why.rfind(std::string(run.fixes[0]->name) + ": ", 0) == 0)
      why = why.substr(run.fixes[0]->name.size() + 2);
    beside("not applied: " + why);
    return;
  }
  if (!row.measured) {
    beside("too few steps to compare");
    return;
  }
  const TrialSpeedup& m = *row.measured;
  const bool by_mean = m.statistic == StepStatistic::kMean;
  // The other statistic where it tells another story (slow steps every few steps).
  const double other = by_mean ? m.median_speedup : m.mean_speedup;
  const std::string aside = std::abs(other / m.speedup - 1) > 0.05
                                ? fmt::format("; by {} step x{:.2f}", by_mean ? "median" : "mean", other)
                                : "";
  beside(fmt::format("{}  measured x{:.2f} ({} step; 95% x{:.2f}-x{:.2f}{})",
                     fmt_step(by_mean ? m.after_mean_ns : m.after_median_ns), m.speedup, statistic_name(m.statistic),
                     m.low, m.high, aside));
  if (row.estimate)
    fmt::print("{}estimated x{:.2f} ({} finding{}{})\n", pad, row.estimate->speedup, row.estimate->finding,
               row.estimate->part.empty() ? "" : ": ", row.estimate->part);
  else
    fmt::print("{}no finding of the as-is run estimated it\n", pad);
  bool numerics = false;
  for (const TrialFix* f : run.fixes) numerics = numerics || f->numerics;
  if (row.losses)
    fmt::print("{}loss {:.4g} -> {:.4g} after {} steps (max diff {:.2f}%){}\n", pad, row.losses->before_last,
               row.losses->after_last, row.losses->compared, row.losses->max_relative_diff * 100,
               numerics ? "; changes numerics" : "");
  else if (numerics)
    fmt::print("{}changes numerics; no losses seen to compare (backward() on a scalar)\n", pad);
}

Status make_output_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0) return Status();
  if (errno == EEXIST)
    return Status::error(
        fmt::format("-o {}: already exists; --try writes its captures into a new folder: name "
                    "one that does not exist",
                    dir));
  return Status::error(fmt::format("-o {}: cannot create the folder ({})", dir, std::strerror(errno)));
}

}  // namespace

bool read_trial_result(const std::string& path, TrialRun* run) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  const Json doc = Json::parse(text.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    run->error = "the trial's result " + path + " is not JSON";
    return false;
  }
  auto numbers = [&](const char* key) {
    std::vector<int64_t> out;
    if (auto it = doc.find(key); it != doc.end() && it->is_array())
      for (const auto& v : *it)
        if (v.is_number() && v.get<double>() > 0 && v.get<double>() < 1e15)  // Under 11 days a step.
          out.push_back(static_cast<int64_t>(v.get<double>()));
    return out;
  };
  const std::vector<int64_t> device = numbers("device_step_ns");
  const std::vector<int64_t> host = numbers("host_step_ns");
  // The GPU's own timeline where CUDA events gave it for most steps: a host running ahead of the
  // GPU ends steps early, then waits; the GPU's step periods do not move with that.
  if (device.size() >= 3 && device.size() * 2 >= host.size()) {
    run->step_ns = device;
    run->clock = "device";
  } else {
    run->step_ns = host;
    run->clock = "host";
  }
  if (auto it = doc.find("losses"); it != doc.end() && it->is_array())
    for (const auto& v : *it) run->losses.push_back(v.is_number() ? v.get<double>() : std::nan(""));
  if (auto it = doc.find("fixes"); it != doc.end() && it->is_object()) {
    for (const auto& [name, entry] : it->items()) {
      TrialRun::Outcome o;
      if (entry.is_object()) {
        if (auto a = entry.find("applied"); a != entry.end() && a->is_boolean()) o.applied = a->get<bool>();
        if (auto d = entry.find("details"); d != entry.end() && d->is_array())
          for (const auto& s : *d)
            if (s.is_string()) o.details.push_back(s.get<std::string>());
      }
      run->outcome[name] = std::move(o);
    }
  }
  return true;
}

std::string not_applied_reason(const TrialRun& run) {
  std::string out;
  for (const TrialFix* f : run.fixes) {
    if (!f->env_name.empty()) continue;
    const auto it = run.outcome.find(std::string(f->name));
    std::string why;
    if (it == run.outcome.end()) {
      why = f->name == "fused-optimizer" ? "no Adam, AdamW, SGD or Adagrad optimizer was built"
            : f->name == "dataloader"    ? "no DataLoader was built"
            : f->name == "non-blocking"  ? "no pinned host tensor was copied to the GPU without non_blocking"
            : f->name == "bf16"          ? "no step ended"
            : f->name == "compile" || f->name == "reduce-overhead"
                ? "no step ended, or no module with parameters was called after the first"
                : "the bootstrap did not run (not a Python program?)";
    } else if (!it->second.applied) {
      why = it->second.details.empty() ? "the bootstrap could not apply it" : it->second.details.front();
    }
    if (!why.empty()) out += (out.empty() ? "" : "; ") + std::string(f->name) + ": " + why;
  }
  return out;
}

int run_try(const TryRequest& request) {
  bool automatic = false;
  std::string error;
  auto parsed = parse_trial_fixes(request.fixes, &automatic, &error);
  if (!parsed) {
    fmt::print(stderr, "gpuscope run: --try: {}\n", terminal_safe(error));
    return 2;
  }
  if (request.steps < 3 || request.warmup < 1 || request.traced_steps < 1) {
    fmt::print(stderr, "gpuscope run: --try-steps takes 3 or more and --try-warmup 1 or more\n");
    return 2;
  }
  if (Status made = make_output_dir(request.output_dir); !made.ok()) {
    fmt::print(stderr, "gpuscope run: {}\n", terminal_safe(made.message()));
    return 2;
  }
  if (!request.html.empty()) {
    if (Status usable = check_output_path("--html", request.html, {}); !usable.ok()) {
      fmt::print(stderr, "gpuscope run: {}\n", terminal_safe(usable.message()));
      return 2;
    }
  }
  std::vector<const TrialFix*> fixes = std::move(*parsed);
  const int rounds = std::max(1, request.rounds);
  const int planned = automatic ? 0 : rounds * (static_cast<int>(fixes.size()) + 1) + 1;
  // Every run, in order; a deque keeps them where the rows below point.
  std::deque<TrialRun> runs;
  runs.push_back(run_trial(request, "as is", {}, 1, planned));
  const TrialRun& as_is = runs.front();
  if (!as_is.error.empty()) {
    fmt::print(stderr,
               "gpuscope run --try: the program as it is gave no measurement, so nothing can be compared "
               "(its output: {})\n",
               terminal_safe(as_is.log));
    return as_is.exit_code != 0 ? as_is.exit_code : 2;
  }
  const std::optional<Report> as_is_report = analyze_capture(as_is.capture);
  if (automatic) {
    // Every fix whose finding the as-is report made (tf32 and bf16 both answer precision-fp32;
    // only the faster of them goes into "together" below).
    for (const TrialFix& fix : trial_fixes()) {
      if (!fix.env_name.empty() && fix.name == "caching-allocator" && !std::getenv(fix.env_name.data())) continue;
      const std::vector<const TrialFix*> one = {&fix};
      const auto estimate = as_is_report ? estimate_for(*as_is_report, one) : std::nullopt;
      if (!estimate) continue;
      // A fix whose own part of a finding is nothing (tf32 where every matrix kernel already
      // runs in TF32) is not tried.
      const bool nothing_to_gain = !estimate->part.empty() && estimate->speedup < 1.005;
      if (!nothing_to_gain) fixes.push_back(&fix);
    }
    if (fixes.empty()) {
      fmt::print(stderr,
                 "gpuscope run --try auto: no finding of the as-is run is one that --try can apply "
                 "(the fixes: {})\n",
                 trial_fix_names());
    }
  }
  // Together runs only where two fixes helped (an auto run's count may then end short).
  const int per_round = static_cast<int>(fixes.size()) + 1 + (automatic && fixes.size() >= 2 ? 1 : 0);
  int total = fixes.empty() ? 1 : rounds * per_round + 1;
  int index = 1;
  // One trial per label and round: the tried labels in the order of their first run.
  std::vector<std::pair<std::string, std::vector<const TrialFix*>>> tried;
  for (const TrialFix* f : fixes) tried.push_back({std::string(f->name), {f}});
  for (size_t i = 0; i < tried.size(); ++i)
    runs.push_back(run_trial(request, tried[i].first, tried[i].second, ++index, total));

  // What each tried label is compared with: every as-is run's steps (the first, those of later
  // rounds, and the one at the end).
  std::vector<const TrialRun*> as_is_runs = {&as_is};
  std::deque<TrialRun> pooled;  // Per tried label, its runs of every round as one.
  auto pool = [&](const std::string& label) {
    TrialRun merged;
    bool first = true;
    for (const TrialRun& run : runs) {
      if (run.label != label) continue;
      if (first) {
        merged = run;
        merged.step_ns.clear();
        first = false;
      }
      if (merged.error.empty() && !run.error.empty()) merged.error = run.error;  // A failed round is said.
      merged.step_ns.insert(merged.step_ns.end(), run.step_ns.begin(), run.step_ns.end());
    }
    pooled.push_back(std::move(merged));
    return &pooled.back();
  };
  auto reference = [&] {
    std::vector<int64_t> steps;
    for (const TrialRun* run : as_is_runs)
      if (run->error.empty()) steps.insert(steps.end(), run->step_ns.begin(), run->step_ns.end());
    return steps;
  };
  // A label's run of round k against the as-is runs that bracket it: round k's and the next
  // one made (round k+1's, or the one at the end).
  auto rounds_of = [&](const std::string& label) {
    std::vector<TrialRound> out;
    size_t k = 0;
    for (const TrialRun& run : runs) {
      if (run.label != label) continue;
      TrialRound round;
      if (run.error.empty()) round.after_ns = run.step_ns;
      for (size_t j = k; j <= k + 1 && j < as_is_runs.size(); ++j)
        if (as_is_runs[j]->error.empty())
          round.before_ns.insert(round.before_ns.end(), as_is_runs[j]->step_ns.begin(), as_is_runs[j]->step_ns.end());
      out.push_back(std::move(round));
      ++k;
    }
    return out;
  };
  auto make_row = [&](const TrialRun& run) {
    Row row;
    row.run = &run;
    if (!run.error.empty()) return row;
    row.not_applied = not_applied_reason(run);
    if (!row.not_applied.empty()) return row;  // Not the fix's speedup: not reported as one.
    row.measured = compare_rounds(rounds_of(run.label), 2000, trial_statistic(run.fixes));
    if (as_is_report) row.estimate = estimate_for(*as_is_report, run.fixes);
    row.losses = compare_losses(as_is.losses, run.losses);
    return row;
  };
  auto make_rows = [&] {
    std::vector<Row> out;
    pooled.clear();
    for (const auto& [label, _] : tried) out.push_back(make_row(*pool(label)));
    return out;
  };
  std::vector<Row> rows = make_rows();

  // auto: the fixes that helped beyond their interval's doubt, together (decided on the first
  // round).
  if (automatic) {
    std::vector<const TrialFix*> helped;
    for (const Row& row : rows)
      if (row.measured && row.not_applied.empty() && row.measured->low > 1.0) helped.push_back(row.run->fixes.front());
    // Fixes of one group are alternatives (bf16 includes what tf32 gives; reduce-overhead
    // compiles as compile does): keep the fastest of each group.
    auto speed_of = [&](const TrialFix* fix) {
      for (const Row& row : rows)
        if (row.run->fixes.front() == fix && row.measured) return row.measured->speedup;
      return 0.0;
    };
    std::vector<const TrialFix*> kept;
    for (const TrialFix* f : helped) {
      const bool beaten = !f->group.empty() && std::any_of(helped.begin(), helped.end(), [&](const TrialFix* g) {
        return g != f && g->group == f->group && (speed_of(g) > speed_of(f) || (speed_of(g) == speed_of(f) && g > f));
      });
      if (!beaten) kept.push_back(f);
    }
    helped = std::move(kept);
    if (helped.size() >= 2) {
      tried.push_back({"together", helped});
      runs.push_back(run_trial(request, "together", helped, ++index, total));
    } else if (per_round > static_cast<int>(tried.size()) + 1) {
      total -= rounds;  // No together run in any round.
    }
  }

  // Later rounds: the program as it is, then each tried label again.
  for (int round = 2; round <= rounds && !tried.empty(); ++round) {
    runs.push_back(run_trial(request, "as is", {}, ++index, total, round));
    as_is_runs.push_back(&runs.back());
    for (const auto& [label, with] : tried) runs.push_back(run_trial(request, label, with, ++index, total, round));
  }

  // The program as it is once more, after the tried runs: a machine's speed moves while trials
  // run (clocks, other work on the host). Each speedup compares with every as-is run, and the
  // drift between the first and the last says how far two runs of the same program came apart.
  std::optional<double> drift;
  if (!tried.empty()) {
    ++index;
    runs.push_back(run_trial(request, kAsIsAgain, {}, index, std::max(index, total)));
    as_is_runs.push_back(&runs.back());
  }
  std::vector<double> as_is_medians;
  for (const TrialRun* run : as_is_runs)
    if (run->error.empty() && !run->step_ns.empty()) as_is_medians.push_back(*median_ns(run->step_ns));
  if (as_is_medians.size() >= 2 && as_is_runs.back()->error.empty() && !as_is_runs.back()->step_ns.empty())
    drift = as_is_medians.back() / as_is_medians.front() - 1;
  rows = make_rows();
  const std::vector<int64_t> as_is_steps = reference();

  // The tried run that went fastest, for --html and the diff hint.
  const Row* best = nullptr;
  for (const Row& row : rows)
    if (row.measured && row.not_applied.empty() && !row.run->capture.empty() &&
        (!best || row.measured->speedup > best->measured->speedup))
      best = &row;
  if (!request.html.empty()) {
    if (!best) {
      fmt::print(stderr, "gpuscope run --try: --html: no tried run to compare with the run as it is\n");
    } else if (auto tried = analyze_capture(best->run->capture); tried && as_is_report) {
      const ReportDiff diff = diff_reports(*as_is_report, *tried);
      if (Status written = write_output_file("--html", request.html, {}, diff_to_html(diff)); !written.ok())
        fmt::print(stderr, "gpuscope run --try: {}\n", terminal_safe(written.message()));
      else
        fmt::print(stderr, "gpuscope run --try: wrote {} (as is against {})\n", terminal_safe(request.html),
                   terminal_safe(best->run->label));
    }
  }

  if (request.json) {
    Json doc;
    doc["schema"] = "gpuscope.try/1";
    doc["command"] = request.command;
    doc["steps_timed"] = request.steps;
    doc["warmup_steps"] = request.warmup;
    Json medians = Json::array();
    for (double m : as_is_medians) medians.push_back(m / 1e6);
    doc["as_is"] = {{"step_ms_median", *median_ns(as_is_steps) / 1e6},
                    {"step_ms_mean", *mean_ns(as_is_steps) / 1e6},
                    {"steps_timed", static_cast<int64_t>(as_is_steps.size())},
                    {"step_ms_medians", medians},
                    {"drift", drift ? Json(*drift) : Json()},
                    {"clock", as_is.clock},
                    {"capture", as_is.capture.empty() ? Json() : Json(as_is.capture)},
                    {"log", as_is.log}};
    Json tries = Json::array();
    for (const Row& row : rows) tries.push_back(row_json(row));
    doc["tries"] = tries;
    fmt::print("{}\n", doc.dump(2));
    return 0;
  }
  fmt::print("gpuscope run --try: {} steps timed per run after {} warm-up, untraced\n", request.steps, request.warmup);
  if (drift && as_is_medians.size() > 2) {
    std::string each;
    for (double m : as_is_medians) each += fmt::format("{}{:.2f}", each.empty() ? "" : ", ", m / 1e6);
    fmt::print("{}", wrap_text(fmt::format("{:<20} {} ({} runs: {})", "as is", fmt_step(*median_ns(as_is_steps)),
                                           as_is_medians.size(), each),
                               80, "  "));
  } else if (drift) {
    fmt::print("  {:<20} {} (first {:.2f}, last {:.2f})\n", "as is", fmt_step(*median_ns(as_is_steps)),
               as_is_medians[0] / 1e6, as_is_medians[1] / 1e6);
  }
  if (drift) {
    if (std::abs(*drift) > kDriftResolved)
      fmt::print("{}", wrap_text(fmt::format("The program as it is ran {:.1f}% {} at the end than at the start: "
                                             "speedups within that are not resolved.",
                                             std::abs(*drift) * 100, *drift > 0 ? "slower" : "faster"),
                                 80, "  "));
  } else {
    fmt::print("  {:<20} {}\n", "as is", fmt_step(*median_ns(as_is_steps)));
  }
  for (const Row& row : rows) print_row(row);
  fmt::print("Trials end after their steps; none of them is the program's real run.\n");
  if (best)
    fmt::print("Compare: gpuscope diff {} {}\n", terminal_safe(as_is.capture), terminal_safe(best->run->capture));
  return 0;
}

}  // namespace gpuscope::cli
