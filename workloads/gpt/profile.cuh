// Per-section GPU time from CUDA events on the compute stream (train_gpt --breakdown). Events
// are recorded around groups of kernels; nothing synchronises until Collect(), so the sections
// cost only the event records. Sections must not nest.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

#include "common/cuda_util.h"

namespace gpuscope::gpt {

class SectionTimer {
 public:
  ~SectionTimer() {
    for (auto& m : marks_) {
      cudaEventDestroy(m.begin);
      cudaEventDestroy(m.end);
    }
  }
  void Begin(const char* name, cudaStream_t s) {
    Mark m{name, NewEvent(), NewEvent()};
    CUDA_CHECK(cudaEventRecord(m.begin, s));
    marks_.push_back(m);
  }
  void End(cudaStream_t s) { CUDA_CHECK(cudaEventRecord(marks_.back().end, s)); }
  // Milliseconds per section name summed over everything recorded; call after a synchronize.
  std::map<std::string, double> Collect() const {
    std::map<std::string, double> ms;
    for (const auto& m : marks_) {
      float t = 0;
      CUDA_CHECK(cudaEventElapsedTime(&t, m.begin, m.end));
      ms[m.name] += t;
    }
    return ms;
  }

 private:
  struct Mark {
    std::string name;
    cudaEvent_t begin, end;
  };
  static cudaEvent_t NewEvent() {
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreate(&e));
    return e;
  }
  std::vector<Mark> marks_;
};

// Scope guard that is a no-op when no timer is attached.
class Section {
 public:
  Section(SectionTimer* t, const char* name, cudaStream_t s) : t_(t), s_(s) {
    if (t_) t_->Begin(name, s_);
  }
  ~Section() {
    if (t_) t_->End(s_);
  }
  Section(const Section&) = delete;
  Section& operator=(const Section&) = delete;

 private:
  SectionTimer* t_;
  cudaStream_t s_;
};

}  // namespace gpuscope::gpt
