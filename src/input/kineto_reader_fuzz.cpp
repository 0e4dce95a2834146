// libFuzzer target for the PyTorch profiler reader: any bytes must yield a trace or a
// Status, never a crash, hang or sanitizer report. Analysing what was read must not crash
// either. The input is read twice, on one thread and by the parallel reader (an inflating
// thread, a parsing thread, batches of a few events), and the two reports must be identical:
// a difference aborts. Build: cmake -DGPUSCOPE_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ (see
// docs/validation.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/analysis.h"
#include "input/kineto_reader.h"
#include "render/report_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  gpuscope::KinetoReadOptions one_thread;
  one_thread.threads = 1;
  gpuscope::KinetoReadOptions parallel;
  parallel.threads = 2;
  parallel.batch_bytes = 64;
  auto one = gpuscope::read_kineto_buffer(bytes, "fuzz", one_thread);
  auto many = gpuscope::read_kineto_buffer(bytes, "fuzz", parallel);
  if (one.ok() != many.ok()) {
    std::fprintf(stderr, "one thread: %s; parallel: %s\n", one.ok() ? "ok" : one.status().message().c_str(),
                 many.ok() ? "ok" : many.status().message().c_str());
    std::abort();
  }
  if (!one.ok()) {
    if (one.status().message() != many.status().message()) std::abort();
    return 0;
  }
  std::vector<gpuscope::Trace> a, b;
  a.push_back(std::move(one).value());
  b.push_back(std::move(many).value());
  if (gpuscope::report_to_json(gpuscope::analyze_traces(a, {})) !=
      gpuscope::report_to_json(gpuscope::analyze_traces(b, {}))) {
    std::fprintf(stderr, "the parallel reader's report differs from one thread's\n");
    std::abort();
  }
  return 0;
}
