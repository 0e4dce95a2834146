// libFuzzer target for the PyTorch profiler reader: any bytes must yield a trace or a
// Status, never a crash, hang or sanitizer report. Analysing what was read must not crash
// either. Build: cmake -DGPUSCOPE_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ (see docs/performance.md).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/analysis.h"
#include "formats/kineto_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto trace = gpuscope::read_kineto_buffer(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  if (trace.ok()) {
    auto reports = gpuscope::analyze_trace(trace.value(), {});
    (void)reports;
  }
  return 0;
}
