// Step detection: where training iterations begin and end on the host clock.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/trace.h"

namespace gpuscope {

struct StepDetection {
  StepSource source = StepSource::kWholeWindow;
  std::vector<Step> steps;     // Empty for kWholeWindow.
  int64_t skipped_warmup = 0;  // Leading steps dropped by drop_warmup_steps.
};

// Drops leading warm-up steps (CUDA context creation, cuBLAS/cuDNN autotuning, compilation):
// with at least 4 steps, a leading step longer than twice the median of the others is not
// representative and leaves the analysis window. At most half the steps are dropped.
void drop_warmup_steps(StepDetection& d);

// In order of preference:
// 1. host annotations named ProfilerStep#N;
// 2. annotations named `step_range` (or, when empty, a default step name: see
//    step_range_name_matches);
// 3. repeated optimizer-step annotations ("Optimizer.step#..."): a step ends where one ends,
//    or, with several optimizers, at the end of each cycle of their order (a GAN's two: one
//    step per iteration; see optimizer_step_ends in steps.cpp);
// 4. iterations of the program's step loop ("gpuscope.iter#<file>:<line>" ranges, from gpuscope's
//    Python bootstrap), with no optimizer (inference, serving, plain tensor code): each range is a
//    step, and so is each iteration before the bootstrap found the loop whose launches repeat the
//    first marked iterations' kernels in order; captures of older gpuscope: repeated outermost
//    forward passes ("gpuscope.forward#"), each starting a step;
// 5. the periodic kernel pattern: the rarest kernel name that recurs at regular intervals
//    (at least 3 times, spanning half the GPU activity; 80% of the gaps between its
//    occurrences, counted in kernels, within 10% of their median, and the kernel sequence
//    repeating at that lag for 90% of the kernels) marks one step per period. The rarest
//    regular kernel is the outermost period: a model of N identical layers gives whole steps;
// 6. none: the caller treats the whole window as one step.
StepDetection detect_steps(const Trace& trace, std::string_view step_range);

// The one set of step-name rules, for every input. With `step_range` given: the name equals it,
// or equals it followed by a number ("train_step#3" for "train_step"). Without: case-insensitive
// "step", "train_step", "training_step", "train step", each optionally followed by a number
// ("Step 12", "train_step#3"). ProfilerStep#N is matched separately (rule 1).
bool step_range_name_matches(std::string_view name, std::string_view step_range);

std::string_view step_source_name(StepSource s);

// The annotations of `trace` that could mark steps (recurring ones), by name with its trailing number shown as
// "N" ("ProfilerStep#N", "train_step#N"; "step" when it has none): those that recur (2 or more)
// or whose name has a step number, with their counts, most frequent first, at most `limit`.
// For the message that says which steps a trace has when --step-range names none of them.
struct StepNameCount {
  std::string name;
  int64_t count = 0;
};
std::vector<StepNameCount> step_like_annotations(const Trace& trace, size_t limit = 5);

// Annotations of `trace` (with a positive duration) that step_range_name_matches `step_range`.
int64_t count_step_range_matches(const Trace& trace, std::string_view step_range);

}  // namespace gpuscope
