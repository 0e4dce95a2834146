// Step detection: where training iterations begin and end on the host clock.
#pragma once

#include <string_view>
#include <vector>

#include "core/trace.h"

namespace gpuscope {

struct StepDetection {
  StepSource source = StepSource::kWholeWindow;
  std::vector<Step> steps;  // Empty for kWholeWindow.
  int64_t skipped_warmup = 0;  // Leading steps dropped by drop_warmup_steps.
};

// Drops leading warm-up steps (CUDA context creation, cuBLAS/cuDNN autotuning, compilation):
// with at least 4 steps, a leading step longer than twice the median of the others is not
// representative and leaves the analysis window. At most half the steps are dropped.
void drop_warmup_steps(StepDetection& d);

// In order of preference:
// 1. steps the collector already set (Trace::steps);
// 2. host annotations named ProfilerStep#N;
// 3. annotations named `step_range` (or, when empty, "step", "train_step", "training_step");
// 4. repeated optimizer-step annotations ("Optimizer.step#..."): a step ends where one ends;
// 5. the periodic kernel pattern: the rarest kernel name that recurs at regular intervals
//    (coefficient of variation under 0.25, at least 3 times, spanning half the GPU activity)
//    marks one step per period;
// 6. none: the caller treats the whole window as one step.
StepDetection detect_steps(const Trace& trace, std::string_view step_range);

std::string_view step_source_name(StepSource s);

}  // namespace gpuscope
