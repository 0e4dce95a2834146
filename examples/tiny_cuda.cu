// A small CUDA C++ program with known activity, for checking `gpuscope run` on a GPU
// (validation/run capture). Prints the counts it produced as one JSON line on stdout.
//
//   tiny_cuda [--steps N] [--kernels-per-step K] [--graph-launches G] [--sleep-ms MS]
//
// Each step is an NVTX range "step" containing K launches of `add_one`, one pinned and one
// pageable copy each way, and one memset; then G launches of a CUDA graph holding
// kGraphKernels `graph_kernel` nodes (kernels inside graphs must be traced one by one).
// --sleep-ms keeps the program alive after the work (for the kill test).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t err_ = (call);                                                          \
    if (err_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_));         \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

__global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

__global__ void graph_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 0.5f;
}

constexpr int kGraphKernels = 20;

int main(int argc, char** argv) {
  int steps = 10, per_step = 100, graph_launches = 5, sleep_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--kernels-per-step")) per_step = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--graph-launches")) graph_launches = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--sleep-ms")) sleep_ms = std::atoi(argv[i + 1]);
  }
  const int n = 1 << 20;
  const size_t bytes = n * sizeof(float);
  float *d = nullptr, *pinned = nullptr;
  float* pageable = static_cast<float*>(std::malloc(bytes));
  CHECK(cudaMalloc(&d, bytes));
  CHECK(cudaMallocHost(&pinned, bytes));
  std::memset(pageable, 0, bytes);
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  for (int s = 0; s < steps; ++s) {
    nvtxRangePushA("step");
    CHECK(cudaMemcpyAsync(d, pinned, bytes, cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemcpy(d, pageable, bytes, cudaMemcpyHostToDevice));
    for (int k = 0; k < per_step; ++k) add_one<<<(n + 255) / 256, 256, 0, stream>>>(d, n);
    CHECK(cudaMemsetAsync(d, 0, 4096, stream));
    CHECK(cudaMemcpyAsync(pinned, d, bytes, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaMemcpy(pageable, d, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaStreamSynchronize(stream));
    nvtxRangePop();
  }

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < kGraphKernels; ++k) graph_kernel<<<(n + 255) / 256, 256, 0, stream>>>(d, n);
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  nvtxMarkA("graphs");
  for (int g = 0; g < graph_launches; ++g) CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));

  std::printf("{\"steps\":%d,\"add_one\":%d,\"graph_kernel\":%d,\"kernels\":%d,\"memcpys\":%d,"
              "\"memsets\":%d}\n",
              steps, steps * per_step, graph_launches * kGraphKernels,
              steps * per_step + graph_launches * kGraphKernels, steps * 4, steps);
  std::fflush(stdout);
  if (sleep_ms > 0) {
    // Keep launching so the kill test interrupts a busy program.
    for (int t = 0; t < sleep_ms / 10; ++t) {
      add_one<<<(n + 255) / 256, 256, 0, stream>>>(d, n);
      usleep(10000);
    }
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFree(d));
  CHECK(cudaFreeHost(pinned));
  std::free(pageable);
  return 3;  // A distinctive exit code: gpuscope run must return it.
}
