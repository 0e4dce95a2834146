// A stand-in for libgpuscope_inject.so on machines without a GPU, for the tests of
// `gpuscope run`: the same entry point (InitializeInjection), the same capture naming and file
// creation (GPUSCOPE_CAPTURE_PREFIX, CaptureWriter::open_new_for_process: O_EXCL|O_NOFOLLOW,
// mode 0600), no CUPTI. gpuscope-fake-cuda-program calls it as the CUDA driver calls the real
// library in cuInit.
//
// At initialisation it writes the process record and one device; at exit, kernels named
// "sim_kernel_<pid>" (GPUSCOPE_SIM_KERNELS of them, default 10; 1 ms each, 1 ms apart, from the
// initialisation time) and the clean-exit stats record. So the file is open for the whole life
// of the process, as with the real library. As the real library, it records RANK and
// WORLD_SIZE from the environment (what torchrun sets). With GPUSCOPE_SIM_NCCL_US=N each
// kernel is followed by an NCCL all-reduce kernel of N us in the gap (a data-parallel step);
// GPUSCOPE_SIM_GAP_US sets the gap after each kernel (default 1000 us).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "capture/capture_writer.h"
#include "core/clock.h"
#include "core/run_protocol.h"

namespace {

using namespace gpuscope;

capture::CaptureWriter* g_writer = nullptr;
int64_t g_start_ns = 0;

void finish() {
  if (!g_writer) return;
  int kernels = 10;
  if (const char* k = std::getenv(run_protocol::kEnvSimKernels.name)) kernels = std::atoi(k);
  int64_t nccl_ns = 0, gap_ns = 1'000'000;
  if (const char* n = std::getenv(run_protocol::kEnvSimNcclUs.name)) nccl_ns = int64_t{1000} * std::atoi(n);
  if (const char* g = std::getenv(run_protocol::kEnvSimGapUs.name)) gap_ns = int64_t{1000} * std::atoi(g);
  const uint32_t name = g_writer->intern("sim_kernel_" + std::to_string(getpid()));
  const uint32_t nccl = g_writer->intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  const int64_t period = 1'000'000 + std::max(gap_ns, nccl_ns);
  for (int i = 0; i < kernels; ++i) {
    capture::KernelRecord r;
    r.start_ns = g_start_ns + period * i;
    r.end_ns = r.start_ns + 1'000'000;
    r.name = name;
    r.grid[0] = 132;
    r.grid[1] = r.grid[2] = 1;
    r.block[0] = 256;
    r.block[1] = r.block[2] = 1;
    r.correlation = static_cast<uint64_t>(nccl_ns > 0 ? 2 * i + 1 : i + 1);
    g_writer->add(r);
    if (nccl_ns > 0) {
      r.start_ns = r.end_ns;
      r.end_ns = r.start_ns + nccl_ns;
      r.name = nccl;
      r.grid[0] = 8;
      r.stream = 20;
      r.correlation = static_cast<uint64_t>(2 * i + 2);
      g_writer->add(r);
    }
  }
  capture::StatsRecord s;
  s.records = g_writer->records();
  s.clean_exit = true;
  g_writer->add(s);
  g_writer->close();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  std::string prefix = "gpuscope";
  if (const char* p = std::getenv(run_protocol::kEnvCapturePrefix.name); p && *p) prefix = p;
  static capture::CaptureWriter writer;
  std::string path, error;
  if (!writer.open_new_for_process(prefix, getpid(), {}, &path, &error)) {
    std::fprintf(stderr, "gpuscope: tracing disabled in pid %d: %s; the program runs untraced\n",
                 static_cast<int>(getpid()), error.c_str());
    return 1;
  }
  g_writer = &writer;
  g_start_ns = realtime_ns();
  capture::ProcessRecord p;
  p.pid = getpid();
  p.ppid = getppid();
  p.start_ns = g_start_ns;
  p.command_line = "gpuscope-fake-cuda-program";
  p.tool_version = "gpuscope " GPUSCOPE_VERSION " (simulated injection)";
  if (const char* r = std::getenv(run_protocol::kEnvRank.name)) p.rank = std::atoi(r);
  if (const char* w = std::getenv(run_protocol::kEnvWorldSize.name)) p.world_size = std::atoi(w);
  writer.add(p);
  capture::DeviceRecord d;
  d.id = 0;
  d.name = "NVIDIA H200";
  d.num_sms = 132;
  d.cc_major = 9;
  d.cc_minor = 0;
  writer.add(d);
  writer.flush();
  std::atexit(finish);
  return 1;
}
