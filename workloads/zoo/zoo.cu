// The pathology zoo: small CUDA programs, each with exactly one planted bottleneck and a
// `--fixed` mode that removes it. One binary with a subcommand per case keeps the build to one
// nvcc invocation.
//
//   zoo CASE [--fixed] [--fuse] [--steps N] [--warmup N]
//
// Each run prints one JSON line on stdout:
//   {"case":"sync_bound","fixed":false,"steps":..,"elapsed_s":..,"steps_per_s":..,...}
// Every step is wrapped in an NVTX range named "step". Timing is host wall time from the first
// measured step to a device synchronize after the last one, warmup steps excluded.
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/args.h"
#include "common/cuda_util.h"

namespace gpuscope::workloads {
namespace {

void CublasCheck(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s:%d: %s failed: cuBLAS status %d\n", file, line, call, static_cast<int>(s));
    std::exit(1);
  }
}
#define CUBLAS_CHECK(call) CublasCheck((call), #call, __FILE__, __LINE__)

// ---- kernels ---------------------------------------------------------------------------------

__device__ __forceinline__ unsigned long long GlobalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Keeps every launched thread doing FMAs until `ns` nanoseconds of device time have passed
// since the block started. Launched with a grid that fits on the device at once, it occupies all
// SMs for a fixed time, independent of clock speed: the "useful GPU work" of a step.
__global__ void BusyKernel(float* sink, unsigned long long ns) {
  unsigned long long start = GlobalTimerNs();
  float a = threadIdx.x * 1e-3f, b = 1.0001f;
  while (GlobalTimerNs() - start < ns) {
#pragma unroll
    for (int i = 0; i < 64; ++i) a = fmaf(a, b, 1e-7f);
  }
  if (a == 12345.f) sink[threadIdx.x] = a;  // practically never; keeps the loop alive
}

void LaunchBusy(float* sink, double us, cudaStream_t stream = 0) {
  static const int blocks = 2 * SmCount();
  BusyKernel<<<blocks, 256, 0, stream>>>(sink, static_cast<unsigned long long>(us * 1e3));
  CUDA_CHECK_LAUNCH();
}

__global__ void SumKernel(const float* x, size_t n, float* out) {
  float s = 0.f;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) s += x[i];
  if (s == -1.2345f) *out = s;  // keeps the reads without an atomic per thread
}

__global__ void FillKernel(float* x, size_t n, float v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    x[i] = v + (i & 7);
}

// Tiny kernel: one block, 256 elements.
__global__ void TinyKernel(float* x) { x[blockIdx.x * 256 + threadIdx.x] *= 1.0001f; }
__global__ void ManyTinyKernel(float* x) {  // the same work, all chunks in one launch
  x[blockIdx.x * 256 + threadIdx.x] *= 1.0001f;
}

// Compute-heavy per element: `iters` dependent FMAs per element, grid-stride loop.
__global__ void HeavyKernel(float* x, size_t n, int iters) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float v = x[i];
    for (int k = 0; k < iters; ++k) v = fmaf(v, 0.999f, 0.001f);
    x[i] = v;
  }
}

// Elementwise chain: y = relu(x*a + b) * c - d, squared-ish, as separate ops or one.
__global__ void Scale(const float* x, float* y, size_t n, float a) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * a;
}
__global__ void AddC(const float* x, float* y, size_t n, float b) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + b;
}
__global__ void Relu(const float* x, float* y, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}
__global__ void Square(const float* x, float* y, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i];
}
__global__ void FusedChain(const float* x, float* y, size_t n, int reps) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int r = 0; r < reps; ++r) {
    v = v * 0.5f;
    v = v + 0.25f;
    v = fmaxf(v, 0.f);
    v = v * v;
  }
  y[i] = v;
}

// Streaming read with optional shared-memory reservation: the dynamic shared memory is what
// limits residency (1 block per SM when it is ~200 KiB), not the work.
__global__ void StreamKernel(const float4* x, size_t n4, float* out) {
  extern __shared__ float smem[];
  float s = 0.f;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
    float4 v = x[i];
    s += v.x + v.y + v.z + v.w;
  }
  smem[threadIdx.x] = s;  // touch the reservation so it is "used"
  __syncthreads();
  if (smem[(threadIdx.x + 1) % blockDim.x] == -1.2345f) *out = s;
}

// ---- harness ---------------------------------------------------------------------------------

struct Options {
  bool fixed = false;
  bool fuse = false;  // launch_bound --fixed: one merged kernel instead of a CUDA graph
  long steps = 0;
  long warmup = 0;
};

struct Result {
  double elapsed_s = 0;
  double steps_per_s = 0;
};

// Runs `warmup` then `steps` steps, each in an NVTX "step" range; times the measured ones.
Result RunSteps(const Options& o, const std::function<void()>& step) {
  for (long i = 0; i < o.warmup; ++i) {
    NvtxRange r("step");
    step();
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  double t0 = NowS();
  for (long i = 0; i < o.steps; ++i) {
    NvtxRange r("step");
    step();
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  Result res;
  res.elapsed_s = NowS() - t0;
  res.steps_per_s = o.steps / res.elapsed_s;
  return res;
}

JsonLine Report(const char* name, const Options& o, const Result& r) {
  JsonLine j;
  j.Add("case", name)
      .Add("fixed", o.fixed)
      .Add("steps", o.steps)
      .Add("elapsed_s", r.elapsed_s)
      .Add("steps_per_s", r.steps_per_s);
  return j;
}

float* DeviceSink() {
  static float* sink = nullptr;
  if (!sink) CUDA_CHECK(cudaMalloc(&sink, 1024 * sizeof(float)));
  return sink;
}

// ---- cases -----------------------------------------------------------------------------------

// Host prepares each batch (6 ms of work on one thread) and the GPU computes on it (2 ms). No
// synchronization anywhere: the GPU simply waits for the host. Fixed: 4 worker threads prepare
// batches ahead into a bounded queue (what DataLoader workers do), so the GPU is fed every 2 ms.
// Planted cause: input (host data preparation on the critical path). Preparation runs inside an
// NVTX range named "input" so a tracer can attribute it.
void InputBound(Options o) {
  const double prep_ms = 6.0, gpu_us = 2000.0;
  const int workers = 4;
  const size_t n = 16384;  // one batch of token ids
  unsigned* dev;
  CUDA_CHECK(cudaMalloc(&dev, n * sizeof(unsigned)));
  auto prepare = [&](std::vector<unsigned>& batch) {
    NvtxRange r("input");
    batch.resize(n);
    HostBusyWork(prep_ms, batch.data(), n);
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<unsigned>> ready;
  bool stop = false;
  std::vector<std::thread> pool;
  if (o.fixed) {
    for (int w = 0; w < workers; ++w)
      pool.emplace_back([&] {
        for (;;) {
          {
            std::unique_lock<std::mutex> lk(mu);
            cv.wait(lk, [&] { return stop || ready.size() < 2 * workers; });
            if (stop) return;
          }
          std::vector<unsigned> b;
          prepare(b);
          std::lock_guard<std::mutex> lk(mu);
          ready.push_back(std::move(b));
          cv.notify_all();
        }
      });
  }
  std::vector<unsigned> batch;
  Result r = RunSteps(o, [&] {
    if (o.fixed) {
      std::unique_lock<std::mutex> lk(mu);
      cv.wait(lk, [&] { return !ready.empty(); });
      batch = std::move(ready.front());
      ready.pop_front();
      cv.notify_all();
    } else {
      prepare(batch);
    }
    CUDA_CHECK(cudaMemcpyAsync(dev, batch.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice, 0));
    LaunchBusy(DeviceSink(), gpu_us);
  });
  {
    std::lock_guard<std::mutex> lk(mu);
    stop = true;
    cv.notify_all();
  }
  for (auto& t : pool) t.join();
  Report("input_bound", o, r)
      .Add("host_prep_ms", prep_ms)
      .Add("gpu_ms", gpu_us / 1e3)
      .Add("prep_threads", o.fixed ? workers : 1)
      .Print();
  CUDA_CHECK(cudaFree(dev));
}

// 50 kernels of 40 us per step, each followed by 30 us of host bookkeeping. Unfixed: a
// cudaDeviceSynchronize after every kernel, so host work and GPU work serialize. Fixed: one
// synchronize per step. Planted cause: sync.
void SyncBound(Options o) {
  const int kernels = 50;
  const double gpu_us = 40, host_us = 30;
  unsigned scratch[64] = {};
  Result r = RunSteps(o, [&] {
    for (int k = 0; k < kernels; ++k) {
      LaunchBusy(DeviceSink(), gpu_us);
      if (!o.fixed) CUDA_CHECK(cudaDeviceSynchronize());
      HostBusyWork(host_us / 1e3, scratch, 64);
    }
    if (o.fixed) CUDA_CHECK(cudaDeviceSynchronize());
  });
  Report("sync_bound", o, r).Add("kernels_per_step", kernels).Print();
}

// 256 MiB host-to-device per step, then a reduction over it. Unfixed: pageable host memory and
// synchronous cudaMemcpy. Fixed: pinned memory, cudaMemcpyAsync. Planted cause: memcpy.
void PageableCopy(Options o) {
  const size_t bytes = 256ull << 20, n = bytes / sizeof(float);
  float* dev;
  CUDA_CHECK(cudaMalloc(&dev, bytes));
  float* host;
  if (o.fixed)
    CUDA_CHECK(cudaMallocHost(&host, bytes));
  else
    host = static_cast<float*>(std::malloc(bytes));
  std::memset(host, 0, bytes);
  Result r = RunSteps(o, [&] {
    if (o.fixed)
      CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, 0));
    else
      CUDA_CHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
    SumKernel<<<4 * SmCount(), 256>>>(dev, n, DeviceSink());
    CUDA_CHECK_LAUNCH();
  });
  Report("pageable_copy", o, r).Add("copy_gb_per_s", bytes * r.steps_per_s / 1e9).Print();
  if (o.fixed)
    CUDA_CHECK(cudaFreeHost(host));
  else
    std::free(host);
  CUDA_CHECK(cudaFree(dev));
}

// 4096 tiny one-block kernels per step. Fixed: the same 4096 kernels replayed from a CUDA graph
// (launch overhead removed, the work unchanged: what the launch-bound finding's estimate models);
// --fixed --fuse: the same work as one launch of 4096 blocks (work merged too).
// Planted cause: launch (kernels shorter than the host takes to issue them).
void LaunchBound(Options o) {
  const int chunks = 4096;
  float* x;
  CUDA_CHECK(cudaMalloc(&x, chunks * 256 * sizeof(float)));
  CUDA_CHECK(cudaMemset(x, 0, chunks * 256 * sizeof(float)));
  cudaStream_t stream = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (o.fixed && !o.fuse) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph;
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int c = 0; c < chunks; ++c) TinyKernel<<<1, 256, 0, stream>>>(x + c * 256);
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
  }
  Result r = RunSteps(o, [&] {
    if (exec) {
      CUDA_CHECK(cudaGraphLaunch(exec, stream));
    } else if (o.fixed) {
      ManyTinyKernel<<<chunks, 256>>>(x);
      CUDA_CHECK_LAUNCH();
    } else {
      for (int c = 0; c < chunks; ++c) TinyKernel<<<1, 256>>>(x + c * 256);
      CUDA_CHECK_LAUNCH();
    }
  });
  Report("launch_bound", o, r)
      .Add("kernels_per_step", o.fixed && o.fuse ? 1 : chunks)
      .Add("fix", !o.fixed ? "none"
                  : o.fuse ? "fused"
                           : "cuda_graph")
      .Print();
  if (exec) {
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaStreamDestroy(stream));
  }
  CUDA_CHECK(cudaFree(x));
}

// Each step allocates 8 buffers of 64 MiB, fills them, frees them. Fixed: allocated once.
// Planted cause: alloc (cudaMalloc/cudaFree on the critical path; cudaFree also synchronizes).
void AllocChurn(Options o) {
  const int nbuf = 8;
  const size_t bytes = 64ull << 20, n = bytes / sizeof(float);
  std::vector<float*> bufs(nbuf, nullptr);
  if (o.fixed)
    for (auto& b : bufs) CUDA_CHECK(cudaMalloc(&b, bytes));
  Result r = RunSteps(o, [&] {
    for (auto& b : bufs) {
      if (!o.fixed) CUDA_CHECK(cudaMalloc(&b, bytes));
      FillKernel<<<4 * SmCount(), 256>>>(b, n, 1.f);
      CUDA_CHECK_LAUNCH();
    }
    if (!o.fixed)
      for (auto& b : bufs) CUDA_CHECK(cudaFree(b));
  });
  Report("alloc_churn", o, r).Add("allocs_per_step", o.fixed ? 0 : nbuf).Print();
  if (o.fixed)
    for (auto& b : bufs) CUDA_CHECK(cudaFree(b));
}

// A compute-heavy kernel over 16 Mi elements launched with 16 blocks (far fewer than the SMs),
// grid-stride. Fixed: one block per 256 elements. Planted cause: under-filled grid (low SM
// active while the GPU reads as 100% busy).
void UnderfilledGrid(Options o) {
  const size_t n = 16ull << 20;
  const int iters = 64;
  float* x;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
  CUDA_CHECK(cudaMemset(x, 0, n * sizeof(float)));
  const int blocks = o.fixed ? static_cast<int>(n / 256) : 16;
  Result r = RunSteps(o, [&] {
    HeavyKernel<<<blocks, 256>>>(x, n, iters);
    CUDA_CHECK_LAUNCH();
  });
  Report("underfilled_grid", o, r).Add("blocks", blocks).Add("sms", SmCount()).Print();
  CUDA_CHECK(cudaFree(x));
}

// 4096^3 GEMM with cuBLAS. Unfixed: fp32 inputs, CUBLAS_COMPUTE_32F (no tensor cores, no TF32).
// Fixed: bf16 inputs and output, fp32 accumulation, tensor cores. Planted cause: precision.
void Fp32Gemm(Options o) {
  const int n = 4096;
  cublasHandle_t h;
  CUBLAS_CHECK(cublasCreate(&h));
  const size_t elems = size_t(n) * n;
  const size_t esize = o.fixed ? 2 : 4;
  void *a, *b, *c;
  CUDA_CHECK(cudaMalloc(&a, elems * esize));
  CUDA_CHECK(cudaMalloc(&b, elems * esize));
  CUDA_CHECK(cudaMalloc(&c, elems * esize));
  CUDA_CHECK(cudaMemset(a, 0, elems * esize));
  CUDA_CHECK(cudaMemset(b, 0, elems * esize));
  const float alpha = 1.f, beta = 0.f;
  const cudaDataType_t t = o.fixed ? CUDA_R_16BF : CUDA_R_32F;
  Result r = RunSteps(o, [&] {
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, t, n, b, t, n, &beta, c, t, n,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  });
  const double tflops = 2.0 * n * n * double(n) * r.steps_per_s / 1e12;
  Report("fp32_gemm", o, r).Add("precision", o.fixed ? "bf16" : "fp32").Add("tflops", tflops).Print();
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(c));
  CUBLAS_CHECK(cublasDestroy(h));
}

// Elementwise chain over 64 Mi floats: 4 ops repeated 4 times = 16 kernels, each reading and
// writing the whole array. Fixed: one kernel computing the same chain in registers.
// Planted cause: unfused kernels (memory traffic 16x what the result needs).
void UnfusedChain(Options o) {
  const size_t n = 64ull << 20;
  const int reps = 4;
  float *x, *y;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&y, n * sizeof(float)));
  CUDA_CHECK(cudaMemset(x, 0, n * sizeof(float)));
  const int threads = 256, blocks = static_cast<int>((n + threads - 1) / threads);
  Result r = RunSteps(o, [&] {
    if (o.fixed) {
      FusedChain<<<blocks, threads>>>(x, y, n, reps);
    } else {
      const float* in = x;
      for (int k = 0; k < reps; ++k) {
        Scale<<<blocks, threads>>>(in, y, n, 0.5f);
        AddC<<<blocks, threads>>>(y, y, n, 0.25f);
        Relu<<<blocks, threads>>>(y, y, n);
        Square<<<blocks, threads>>>(y, y, n);
        in = y;
      }
    }
    CUDA_CHECK_LAUNCH();
  });
  Report("unfused_chain", o, r).Add("kernels_per_step", o.fixed ? 1 : 4 * reps).Print();
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
}

// A streaming reduction over 1 GiB, 256-thread blocks, grid of 8 blocks per SM. Unfixed: each
// block reserves 200 KiB of dynamic shared memory, so one block (8 warps of 64) fits per SM and
// too few loads are in flight to reach memory bandwidth. Fixed: no reservation, 8 blocks per SM.
// Planted cause: low occupancy (shared-memory starved).
void LowOccupancy(Options o) {
  const size_t bytes = 1ull << 30, n4 = bytes / sizeof(float4);
  float4* x;
  CUDA_CHECK(cudaMalloc(&x, bytes));
  CUDA_CHECK(cudaMemset(x, 0, bytes));
  const size_t smem = o.fixed ? 256 * sizeof(float) : 200u << 10;
  CUDA_CHECK(cudaFuncSetAttribute(StreamKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10));
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, StreamKernel, 256, smem));
  const int blocks = 8 * SmCount();
  Result r = RunSteps(o, [&] {
    StreamKernel<<<blocks, 256, smem>>>(x, n4, DeviceSink());
    CUDA_CHECK_LAUNCH();
  });
  Report("low_occupancy", o, r)
      .Add("blocks_per_sm", per_sm)
      .Add("smem_bytes", static_cast<long>(smem))
      .Add("gb_per_s", bytes * r.steps_per_s / 1e9)
      .Print();
  CUDA_CHECK(cudaFree(x));
}

struct Case {
  const char* name;
  void (*run)(Options);
  long steps;
  const char* what;
};

const Case kCases[] = {
    {"input_bound", InputBound, 200, "host prepares each batch between steps"},
    {"sync_bound", SyncBound, 200, "cudaDeviceSynchronize after every kernel"},
    {"pageable_copy", PageableCopy, 20, "synchronous copies from pageable host memory"},
    {"launch_bound", LaunchBound, 50, "thousands of tiny kernels per step"},
    {"alloc_churn", AllocChurn, 50, "cudaMalloc/cudaFree every step"},
    {"underfilled_grid", UnderfilledGrid, 200, "fewer blocks than SMs"},
    {"fp32_gemm", Fp32Gemm, 200, "fp32 GEMM where bf16 tensor cores would serve"},
    {"unfused_chain", UnfusedChain, 200, "elementwise chain as separate kernels"},
    {"low_occupancy", LowOccupancy, 200, "shared-memory starved blocks"},
};

void PrintUsage() {
  std::fprintf(stderr, "usage: zoo CASE [--fixed] [--fuse] [--steps N] [--warmup N]\ncases:\n");
  for (const auto& c : kCases) std::fprintf(stderr, "  %-17s %s\n", c.name, c.what);
  std::fprintf(stderr, "  %-17s every case, unfixed then fixed\n", "all");
}

}  // namespace
}  // namespace gpuscope::workloads

int main(int argc, char** argv) {
  using namespace gpuscope::workloads;
  if (argc < 2 || std::string(argv[1]) == "--help") {
    PrintUsage();
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
  Args args(argc, argv, 2);
  Options o;
  o.fixed = args.Flag("fixed");
  o.fuse = args.Flag("fuse");
  const long steps = args.Int("steps", 0);
  o.warmup = args.Int("warmup", 3);
  args.RejectUnknown();
  bool found = false;
  for (const auto& c : kCases) {
    if (name != c.name && name != "all") continue;
    found = true;
    o.steps = steps > 0 ? steps : c.steps;
    if (name == "all") {
      for (bool f : {false, true}) {
        o.fixed = f;
        c.run(o);
      }
    } else {
      c.run(o);
    }
  }
  if (!found) {
    std::fprintf(stderr, "usage error: unknown case '%s'\n", name.c_str());
    PrintUsage();
    return 2;
  }
  return 0;
}
