#include "core/steps.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <map>
#include <unordered_map>

#include <fmt/core.h>

#include "core/run_protocol.h"

namespace gpuscope {

std::string_view step_source_name(StepSource s) {
  switch (s) {
    case StepSource::kProfilerStep:
      return "profiler_step";
    case StepSource::kNvtxRange:
      return "nvtx_range";
    case StepSource::kOptimizerStep:
      return "optimizer_step";
    case StepSource::kPythonLoop:
      return "python_loop";
    case StepSource::kForwardPass:
      return "forward_pass";
    case StepSource::kKernelPattern:
      return "kernel_pattern";
    case StepSource::kWholeWindow:
      return "whole_window";
  }
  return "whole_window";
}

namespace {

// Keeps the outermost of overlapping ranges (a nested range of the same name is not a step).
std::vector<Step> outermost(std::vector<Step> steps) {
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.start_ns < b.start_ns; });
  std::vector<Step> out;
  for (const Step& s : steps) {
    if (!out.empty() && s.start_ns < out.back().end_ns) continue;
    out.push_back(s);
  }
  return out;
}

// Strips a trailing number and its separator: "step 12" -> "step", "train_step#3" ->
// "train_step". Returns the name unchanged when it has no trailing number.
std::string_view strip_step_number(std::string_view name) {
  size_t end = name.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
  if (end == name.size()) return name;
  while (end > 0 && (name[end - 1] == ' ' || name[end - 1] == '#' || name[end - 1] == '_' || name[end - 1] == '-' ||
                     name[end - 1] == ':'))
    --end;
  return name.substr(0, end);
}

bool equals_ci(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// Steps from the period of a kernel that runs once per iteration (detect_steps, rule 5).
std::vector<Step> kernel_pattern_steps(const Trace& trace) {
  if (trace.kernels.size() < 6) return {};
  std::unordered_map<int32_t, size_t> per_device;
  for (const Kernel& k : trace.kernels) ++per_device[k.device];
  const int32_t device = std::max_element(per_device.begin(), per_device.end(), [](auto& a, auto& b) {
                           return a.second < b.second;
                         })->first;
  std::vector<const Kernel*> seq;
  for (const Kernel& k : trace.kernels) {
    if (k.device == device) seq.push_back(&k);
  }
  std::stable_sort(seq.begin(), seq.end(), [](const Kernel* a, const Kernel* b) { return a->start_ns < b->start_ns; });
  const int64_t first = seq.front()->start_ns;
  int64_t last = first;
  for (const Kernel* k : seq) last = std::max(last, k->end_ns);
  std::unordered_map<StringId, std::vector<size_t>> positions;
  for (size_t i = 0; i < seq.size(); ++i) positions[seq[i]->name].push_back(i);
  // A candidate's occurrences span half the window's time, or half of its kernels: a short
  // program's steps (30 steps of 1 ms) can follow a start-up ten times longer than they are
  // (first-launch module loading, cuBLAS set-up, a model built on the GPU), and they still hold
  // most of its kernels.
  std::vector<const std::vector<size_t>*> candidates;
  for (const auto& [name, pos] : positions) {
    if (pos.size() < 3) continue;
    const double span = static_cast<double>(seq[pos.back()]->start_ns - seq[pos.front()]->start_ns);
    const double kernels_within = static_cast<double>(pos.back() - pos.front());
    if (span < 0.5 * static_cast<double>(last - first) && kernels_within < 0.5 * static_cast<double>(seq.size()))
      continue;
    candidates.push_back(&pos);
  }
  // Rarest first; ties by first position, so the choice does not depend on hash order.
  std::sort(candidates.begin(), candidates.end(), [](const auto* a, const auto* b) {
    return a->size() != b->size() ? a->size() < b->size() : a->front() < b->front();
  });
  for (const std::vector<size_t>* pos : candidates) {
    std::vector<size_t> lags;
    for (size_t i = 1; i < pos->size(); ++i) lags.push_back((*pos)[i] - (*pos)[i - 1]);
    std::vector<size_t> sorted = lags;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<ptrdiff_t>(sorted.size() / 2), sorted.end());
    const size_t lag = sorted[sorted.size() / 2];
    if (lag < 2) continue;  // A step of one kernel is no step: a loop of one kernel has no pattern.
    size_t regular = 0;
    for (size_t l : lags) {
      if (static_cast<double>(l) >= 0.9 * static_cast<double>(lag) &&
          static_cast<double>(l) <= 1.1 * static_cast<double>(lag))
        ++regular;
    }
    if (static_cast<double>(regular) < 0.8 * static_cast<double>(lags.size())) continue;
    // In time too, loosely (host jitter moves steps): 80% of the periods within half to twice
    // their median.
    std::vector<int64_t> periods;
    for (size_t i = 1; i < pos->size(); ++i) periods.push_back(seq[(*pos)[i]]->start_ns - seq[(*pos)[i - 1]]->start_ns);
    std::vector<int64_t> by_length = periods;
    std::nth_element(by_length.begin(), by_length.begin() + static_cast<ptrdiff_t>(by_length.size() / 2),
                     by_length.end());
    const int64_t median_period = by_length[by_length.size() / 2];
    const auto steady = std::count_if(periods.begin(), periods.end(),
                                      [&](int64_t p) { return 2 * p >= median_period && p <= 2 * median_period; });
    if (median_period <= 0 || static_cast<double>(steady) < 0.8 * static_cast<double>(periods.size())) continue;
    size_t same = 0, compared = 0;
    for (size_t i = pos->front(); i + lag <= pos->back(); ++i, ++compared) {
      if (seq[i]->name == seq[i + lag]->name) ++same;
    }
    if (compared == 0 || static_cast<double>(same) < 0.9 * static_cast<double>(compared)) continue;
    std::vector<Step> steps;
    for (size_t i = 1; i < pos->size(); ++i) {
      steps.push_back({seq[(*pos)[i - 1]]->start_ns, seq[(*pos)[i]]->start_ns, static_cast<int64_t>(i)});
    }
    return steps;
  }
  return {};
}

// Hook-derived markers (optimizer steps, forward passes) mark steps only where the program
// calls them: a program that captures its step in a CUDA graph replays it without calling the
// optimizer, so the optimizer steps seen are the warm-up's. They are used only when at least
// half of the kernels start within their span (start-up kernels before it are few).
bool spans_most_gpu_work(const Trace& trace, const std::vector<Step>& marks) {
  if (trace.kernels.empty() || marks.empty()) return true;
  int64_t mark_first = INT64_MAX, mark_last = INT64_MIN;
  for (const Step& m : marks) {
    mark_first = std::min(mark_first, m.start_ns);
    mark_last = std::max(mark_last, m.end_ns);
  }
  const auto inside = std::count_if(trace.kernels.begin(), trace.kernels.end(), [&](const Kernel& k) {
    return k.start_ns >= mark_first && k.start_ns < mark_last;
  });
  return 2 * static_cast<size_t>(inside) >= trace.kernels.size();
}

// Where the steps end, given the optimizer steps in order, each with the optimizer's name in
// `number`. Where the order of the optimizers repeats (in 9 of 10 places, over at least three
// cycles of at most 16 optimizer steps), a step ends at the end of each cycle: one optimizer,
// one step each; a GAN's discriminator and generator, one step per iteration; a critic stepped
// five times for each generator step, one step per six. Otherwise a step ends at the first
// optimizer step, and again wherever an optimizer steps that already stepped since the last
// step ended (the bootstrap counts steps so, not knowing the cycle in advance).
std::vector<int64_t> optimizer_step_ends(const std::vector<Step>& optimizer_steps) {
  const size_t n = optimizer_steps.size();
  std::vector<int64_t> ends;
  for (size_t period = 1; period <= 16 && 3 * period <= n; ++period) {
    size_t same = 0;
    for (size_t i = 0; i + period < n; ++i) same += optimizer_steps[i].number == optimizer_steps[i + period].number;
    if (same * 10 < (n - period) * 9) continue;
    for (size_t i = 0; i < n; i += period) ends.push_back(optimizer_steps[i].end_ns);
    return ends;
  }
  std::vector<int64_t> since;  // the optimizers stepped since the last step ended
  for (const Step& s : optimizer_steps) {
    if (since.empty() || std::find(since.begin(), since.end(), s.number) != since.end()) {
      ends.push_back(s.end_ns);
      since.clear();
    }
    since.push_back(s.number);
  }
  return ends;
}

// The step loop's iterations before its first marked one. The bootstrap marks iterations only
// once it has found the loop, some ten to twenty iterations in; the kernels of the iterations
// before are in the trace all the same. Walking back from the first marked iteration, each
// earlier run of launch calls (on the thread that launched the marked ones) whose kernels are
// the marked iterations' kernels, in order, and whose span is within half to twice their
// median, is one more iteration. The first three marked iterations must launch the same
// sequence; a loop whose iterations differ (other shapes, other branches) is not extended.
std::vector<Step> loop_iterations_before_marks(const Trace& trace, const std::vector<Step>& marked) {
  constexpr size_t kAgree = 3;
  if (marked.size() < kAgree || trace.kernels.empty()) return {};
  std::unordered_map<uint64_t, const Kernel*> first_kernel;  // correlation: its first kernel
  for (const Kernel& k : trace.kernels) {
    if (!k.correlation) continue;
    auto [it, fresh] = first_kernel.try_emplace(*k.correlation, &k);
    if (!fresh && k.start_ns < it->second->start_ns) it->second = &k;
  }
  struct Launch {
    int64_t at_ns;
    int32_t pid, tid;
    StringId kernel;
  };
  std::vector<Launch> launches;
  for (const ApiCall& c : trace.api_calls) {
    if (c.api_class != ApiClass::kLaunch || !c.correlation) continue;
    if (auto it = first_kernel.find(*c.correlation); it != first_kernel.end())
      launches.push_back({c.start_ns, c.pid, c.tid, it->second->name});
  }
  if (launches.empty()) return {};
  std::stable_sort(launches.begin(), launches.end(),
                   [](const Launch& a, const Launch& b) { return a.at_ns < b.at_ns; });
  // The launching thread: that of the first marked iteration's first launch.
  const auto first = std::lower_bound(launches.begin(), launches.end(), marked.front().start_ns,
                                      [](const Launch& l, int64_t t) { return l.at_ns < t; });
  if (first == launches.end() || first->at_ns >= marked.front().end_ns) return {};
  const int32_t pid = first->pid, tid = first->tid;
  std::vector<const Launch*> own;  // the launching thread's launches, in time order
  for (const Launch& l : launches) {
    if (l.pid == pid && l.tid == tid) own.push_back(&l);
  }
  std::vector<StringId> sequence;
  std::vector<int64_t> offsets;  // iteration start to its first launch
  for (size_t i = 0; i < kAgree; ++i) {
    std::vector<StringId> seq;
    for (const Launch* l : own) {
      if (l->at_ns < marked[i].start_ns || l->at_ns >= marked[i].end_ns) continue;
      if (seq.empty()) offsets.push_back(l->at_ns - marked[i].start_ns);
      seq.push_back(l->kernel);
    }
    if (seq.empty() || (i > 0 && seq != sequence)) return {};
    if (i == 0) sequence = std::move(seq);
  }
  std::sort(offsets.begin(), offsets.end());
  const int64_t offset = offsets[offsets.size() / 2];
  std::vector<int64_t> lengths;
  for (const Step& s : marked) lengths.push_back(s.end_ns - s.start_ns);
  std::nth_element(lengths.begin(), lengths.begin() + static_cast<ptrdiff_t>(lengths.size() / 2), lengths.end());
  const int64_t median = lengths[lengths.size() / 2];
  size_t k = static_cast<size_t>(
      std::find_if(own.begin(), own.end(), [&](const Launch* l) { return l->at_ns >= marked.front().start_ns; }) -
      own.begin());
  const size_t n = sequence.size();
  int64_t next_start = marked.front().start_ns;
  std::vector<Step> before;
  while (k >= n) {
    bool same = true;
    for (size_t j = 0; j < n && same; ++j) same = own[k - n + j]->kernel == sequence[j];
    if (!same) break;
    const int64_t start = own[k - n]->at_ns - offset;
    const int64_t length = next_start - start;
    if (2 * length < median || length > 2 * median) break;
    before.push_back({start, next_start, 0});
    next_start = start;
    k -= n;
  }
  std::reverse(before.begin(), before.end());
  return before;
}

}  // namespace

StepDetection detect_steps(const Trace& trace, std::string_view step_range) {
  StepDetection d;
  std::vector<Step> profiler, named, optimizer;
  std::unordered_map<StringId, std::vector<Step>> forwards, loops;
  for (const HostEvent& e : trace.host_events) {
    if (e.kind != HostEventKind::kAnnotation || e.end_ns <= e.start_ns) continue;
    const std::string_view name = trace.strings.view(e.name);
    if (name.starts_with("ProfilerStep#")) {
      int64_t n = 0;
      const auto digits = name.substr(13);
      std::from_chars(digits.data(), digits.data() + digits.size(), n);
      profiler.push_back({e.start_ns, e.end_ns, n});
    } else if (step_range_name_matches(name, step_range)) {
      int64_t n = static_cast<int64_t>(named.size());
      if (const std::string_view stem = strip_step_number(name); stem.size() < name.size()) {
        const std::string_view digits = name.substr(name.find_first_of("0123456789", stem.size()));
        std::from_chars(digits.data(), digits.data() + digits.size(), n);
      }
      named.push_back({e.start_ns, e.end_ns, n});
    } else if (name.starts_with(run_protocol::kOptimizerStepRange.prefix)) {
      // The name tells the optimizers apart: its class, and the bootstrap's ordinal for each
      // optimizer after the first ("Optimizer.step#Adam.step#2"). Kept in `number` until the
      // steps are formed.
      optimizer.push_back({e.start_ns, e.end_ns, static_cast<int64_t>(e.name)});
    } else if (name.starts_with(run_protocol::kStepLoopRange.prefix)) {
      loops[e.name].push_back({e.start_ns, e.end_ns, 0});
    } else if (name.starts_with(run_protocol::kForwardRange.prefix)) {
      forwards[e.name].push_back({e.start_ns, e.end_ns, 0});
    }
  }
  // The loop whose iterations are most numerous (a process marks one loop; several processes'
  // host events may share a trace).
  std::vector<Step>* loop = nullptr;
  for (auto& [name, v] : loops) {
    if (!loop || v.size() > loop->size()) loop = &v;
  }
  // The module class whose outermost forwards are most numerous (the model, not a helper).
  std::vector<Step>* forward = nullptr;
  for (auto& [name, v] : forwards) {
    if (!forward || v.size() > forward->size()) forward = &v;
  }
  if (!profiler.empty()) {
    d.source = StepSource::kProfilerStep;
    d.steps = outermost(std::move(profiler));
  } else if (!named.empty()) {
    d.source = StepSource::kNvtxRange;
    d.steps = outermost(std::move(named));
  } else if (const std::vector<int64_t> ends = optimizer_step_ends(outermost(optimizer));
             ends.size() >= 2 && spans_most_gpu_work(trace, optimizer)) {
    d.source = StepSource::kOptimizerStep;
    for (size_t i = 1; i < ends.size(); ++i) d.steps.push_back({ends[i - 1], ends[i], static_cast<int64_t>(i)});
  } else if (loop && loop->size() >= 2 && spans_most_gpu_work(trace, *loop)) {
    // Each range is one whole iteration, from one jump back to the loop's head to the next.
    d.source = StepSource::kPythonLoop;
    d.steps = outermost(std::move(*loop));
    std::vector<Step> before = loop_iterations_before_marks(trace, d.steps);
    d.steps.insert(d.steps.begin(), before.begin(), before.end());
    for (size_t i = 0; i < d.steps.size(); ++i) d.steps[i].number = static_cast<int64_t>(i + 1);
  } else if (forward && forward->size() >= 3 && spans_most_gpu_work(trace, *forward)) {
    // One step runs from the start of one forward to the start of the next.
    std::vector<Step> f = outermost(std::move(*forward));
    d.source = StepSource::kForwardPass;
    for (size_t i = 1; i < f.size(); ++i)
      d.steps.push_back({f[i - 1].start_ns, f[i].start_ns, static_cast<int64_t>(i)});
  } else if (auto pattern = kernel_pattern_steps(trace); !pattern.empty()) {
    d.source = StepSource::kKernelPattern;
    d.steps = std::move(pattern);
  }
  return d;
}

std::vector<StepNameCount> step_like_annotations(const Trace& trace, size_t limit) {
  std::map<std::string, std::pair<int64_t, bool>> counts;  // name: count, has a step number
  for (const HostEvent& e : trace.host_events) {
    if (e.kind != HostEventKind::kAnnotation || e.end_ns <= e.start_ns) continue;
    const std::string_view name = trace.strings.view(e.name);
    const std::string_view stem = strip_step_number(name);
    const bool numbered = stem.size() < name.size();
    auto& c = counts[numbered ? fmt::format("{}{}N", stem, name[stem.size()] == '#' ? "#" : " ") : std::string(name)];
    c.first += 1;
    c.second = c.second || numbered;
  }
  std::vector<StepNameCount> out;
  for (auto& [name, c] : counts) {
    if (c.first >= 2 || c.second) out.push_back({name, c.first});
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  if (out.size() > limit) out.resize(limit);
  return out;
}

int64_t count_step_range_matches(const Trace& trace, std::string_view step_range) {
  int64_t n = 0;
  for (const HostEvent& e : trace.host_events) {
    if (e.kind == HostEventKind::kAnnotation && e.end_ns > e.start_ns &&
        step_range_name_matches(trace.strings.view(e.name), step_range))
      ++n;
  }
  return n;
}

bool step_range_name_matches(std::string_view name, std::string_view step_range) {
  const std::string_view stem = strip_step_number(name);
  if (!step_range.empty()) return name == step_range || (stem.size() < name.size() && stem == step_range);
  for (std::string_view known : {"step", "train_step", "training_step", "train step", "profilerstep"}) {
    if (equals_ci(stem, known)) return true;
  }
  return false;
}

void drop_warmup_steps(StepDetection& d) {
  const size_t n = d.steps.size();
  if (n < 4) return;
  std::vector<int64_t> rest;
  for (size_t i = 1; i < n; ++i) rest.push_back(d.steps[i].end_ns - d.steps[i].start_ns);
  std::nth_element(rest.begin(), rest.begin() + static_cast<ptrdiff_t>(rest.size() / 2), rest.end());
  const int64_t median = rest[rest.size() / 2];
  size_t drop = 0;
  while (drop < n / 2 && d.steps[drop].end_ns - d.steps[drop].start_ns > 2 * median) ++drop;
  d.steps.erase(d.steps.begin(), d.steps.begin() + static_cast<ptrdiff_t>(drop));
  d.skipped_warmup = static_cast<int64_t>(drop);
}

}  // namespace gpuscope
