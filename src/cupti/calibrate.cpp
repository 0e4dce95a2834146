// gpuscope-calibrate: the host's cost of one kernel launch call, for `gpuscope run` to measure
// what tracing adds to each launch on this host (not a user command).
//
// `gpuscope run` starts it twice before the traced program and twice after it: once plain, once
// with the same injection library as the program, and averages the two pairs. Each run launches
// an empty kernel through the CUDA runtime (cudaLaunchKernel, as PyTorch and most CUDA programs
// do) in rounds of back-to-back calls on the legacy default stream and prints one JSON line:
//   {"launch_ns": <median over rounds of host ns per launch call>, "rounds": R, "launches": N,
//    "spread_ns": <max - min over rounds>}
// The kernel comes from PTX text (cudaLibraryLoadData) so the binary runs on any GPU the driver
// can JIT for, without nvcc at build time.
//
// Exit codes: 0 measured; 2 usage error or no usable GPU (one line on stderr).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// An empty kernel taking one pointer, like the zoo's tiny kernels and most elementwise ones.
constexpr char kPtx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry gpuscope_calibrate_empty(.param .u64 p)\n"
    "{\n"
    "  ret;\n"
    "}\n";

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "gpuscope-calibrate: %s failed: %s\n", what, cudaGetErrorString(e));
  return false;
}

int parse_count(const char* flag, const char* value, int lo, int hi) {
  char* end = nullptr;
  long v = value ? std::strtol(value, &end, 10) : 0;
  if (!value || *end != '\0' || v < lo || v > hi) {
    std::fprintf(stderr, "gpuscope-calibrate: %s needs an integer in [%d, %d]\n", flag, lo, hi);
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  int launches = 2000, rounds = 15;
  for (int i = 1; i < argc; ++i) {
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (std::strcmp(argv[i], "--launches") == 0) {
      launches = parse_count("--launches", value, 10, 1000000), ++i;
    } else if (std::strcmp(argv[i], "--rounds") == 0) {
      rounds = parse_count("--rounds", value, 1, 1000), ++i;
    } else {
      std::fprintf(stderr,
                   "usage: gpuscope-calibrate [--launches N] [--rounds R]\n"
                   "Prints the median host ns of one cudaLaunchKernel call of an empty kernel.\n");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  void* buffer = nullptr;
  if (!ok(cudaFree(nullptr), "CUDA initialisation") ||
      !ok(cudaLibraryLoadData(&library, kPtx, nullptr, nullptr, 0, nullptr, nullptr, 0), "cudaLibraryLoadData") ||
      !ok(cudaLibraryGetKernel(&kernel, library, "gpuscope_calibrate_empty"), "cudaLibraryGetKernel") ||
      !ok(cudaMalloc(&buffer, 256), "cudaMalloc"))
    return 2;
  void* args[] = {&buffer};
  auto launch = [&] {
    return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(1), dim3(32), args, 0, nullptr);
  };
  // Warm-up: the first launches load the module and grow the driver's queues.
  for (int i = 0; i < 500; ++i)
    if (!ok(launch(), "cudaLaunchKernel")) return 2;
  if (!ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return 2;

  std::vector<double> per_launch;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) launch();
    const auto t1 = std::chrono::steady_clock::now();
    if (!ok(cudaGetLastError(), "cudaLaunchKernel") || !ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return 2;
    per_launch.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / launches);
  }
  std::sort(per_launch.begin(), per_launch.end());
  std::printf("{\"launch_ns\": %.1f, \"rounds\": %d, \"launches\": %d, \"spread_ns\": %.1f}\n",
              per_launch[per_launch.size() / 2], rounds, launches, per_launch.back() - per_launch.front());
  cudaFree(buffer);
  cudaLibraryUnload(library);
  return 0;
}
