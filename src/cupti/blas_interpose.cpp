// libgpuscope_blas.so: records GEMM shapes from cuBLAS and cuBLASLt calls, LD_PRELOADed by
// `gpuscope run`. It links neither cuBLAS nor CUPTI (GPU.md: forcing a second CUPTI into a
// PyTorch process crashed it).
//
// How the real functions are found: PyTorch loads cuBLAS in a local scope, so
// dlsym(RTLD_NEXT, ...) returns NULL there; dlopen(<soname>, RTLD_NOLOAD) of the already loaded
// library and dlsym on that handle finds the real definition (tried on the H200, 2026-11-30).
// If the real function cannot be found the call returns CUBLAS_STATUS_NOT_INITIALIZED instead
// of jumping to NULL.
//
// Cost on the application thread: two clock reads, a few attribute queries for cuBLASLt, and a
// spinlock-protected append to a fixed ring; no allocation after the first call, no I/O.
// Calls nested inside another interposed call on the same thread (cuBLAS calling cuBLASLt) are
// not recorded twice.
#include <cublasLt.h>
#include <cublas_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/clock.h"
#include "core/run_protocol.h"
#include "cupti/gemm_calls.h"

namespace {

using gpuscope::realtime_ns;

constexpr size_t kRingCapacity = 1 << 16;

struct Ring {
  std::atomic_flag lock = ATOMIC_FLAG_INIT;
  GpuscopeGemmCall calls[kRingCapacity];
  size_t size = 0;
  uint64_t dropped = 0;
};

Ring& ring() {
  static Ring* r = new Ring();  // Never destroyed: other libraries' destructors may still call us.
  return *r;
}

void lock(Ring& r) {
  while (r.lock.test_and_set(std::memory_order_acquire)) {
  }
}
void unlock(Ring& r) { r.lock.clear(std::memory_order_release); }

// A child forked while another thread held the lock would spin forever: reset it.
void after_fork_child() {
  ring().lock.clear();
  ring().size = 0;
}
[[maybe_unused]] const int kAtFork = [] {
  pthread_atfork(nullptr, nullptr, after_fork_child);
  return 0;
}();

thread_local int t_depth = 0;
thread_local int32_t t_tid = 0;

void* find_real(const char* const* sonames, const char* name) {
  for (const char* const* so = sonames; *so; ++so) {
    if (void* handle = dlopen(*so, RTLD_NOLOAD | RTLD_LAZY)) {
      void* fn = dlsym(handle, name);
      dlclose(handle);  // Drops only the reference NOLOAD added.
      if (fn) return fn;
    }
  }
  return dlsym(RTLD_NEXT, name);
}

const char* const kCublas[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", nullptr};
const char* const kCublasLt[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so", nullptr};

template <typename Fn>
Fn real(std::atomic<void*>& cache, const char* const* sonames, const char* name) {
  void* fn = cache.load(std::memory_order_acquire);
  if (!fn) {
    fn = find_real(sonames, name);
    cache.store(fn, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(fn);
}

// Off until a bounded trace window opens (GPUSCOPE_TRACE_DEFERRED=1) and after it closes; the
// injection library switches it with gpuscope_blas_set_recording.
std::atomic<bool>& recording() {
  static std::atomic<bool> on{[] {
    const char* d = std::getenv(gpuscope::run_protocol::kEnvTraceDeferred.name);
    return !(d && std::strcmp(d, "1") == 0);
  }()};
  return on;
}

void record(const GpuscopeGemmCall& call) {
  Ring& r = ring();
  lock(r);
  if (r.size < kRingCapacity) {
    r.calls[r.size++] = call;
  } else {
    ++r.dropped;
  }
  unlock(r);
}

// Times the real call and records it unless it is nested in another recorded call.
class Scope {
 public:
  Scope(GpuscopeGemmApi api, int64_t m, int64_t n, int64_t k, int64_t batch, int32_t a, int32_t b, int32_t c, bool ta,
        bool tb)
      : outer_(t_depth++ == 0 && recording().load(std::memory_order_relaxed)) {
    if (!outer_) return;
    if (t_tid == 0) t_tid = static_cast<int32_t>(syscall(SYS_gettid));
    call_.m = m;
    call_.n = n;
    call_.k = k;
    call_.batch = batch;
    call_.a_type = a;
    call_.b_type = b;
    call_.c_type = c;
    call_.api = api;
    call_.trans_a = ta;
    call_.trans_b = tb;
    call_.tid = t_tid;
    call_.start_ns = realtime_ns();
  }
  ~Scope() {
    --t_depth;
    if (!outer_) return;
    call_.end_ns = realtime_ns();
    record(call_);
  }

 private:
  bool outer_;
  GpuscopeGemmCall call_{};
};

bool is_trans(cublasOperation_t op) { return op != CUBLAS_OP_N; }

}  // namespace

extern "C" {

// _exit (Python's os._exit, used by DataLoader workers and scripts that skip interpreter
// teardown) runs no atexit handler, so the injection library registers its final flush here.
// The hook is a no-op in forked children (the injection library checks).
static std::atomic<void (*)()> g_exit_hook{nullptr};

__attribute__((visibility("default"))) void gpuscope_blas_set_recording(int on) { recording().store(on != 0); }

__attribute__((visibility("default"))) void gpuscope_blas_set_exit_hook(void (*hook)()) { g_exit_hook.store(hook); }

__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  if (auto hook = g_exit_hook.exchange(nullptr)) hook();
  using ExitFn = void (*)(int);
  static auto real_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_exit"));
  if (real_exit) real_exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

__attribute__((visibility("default"))) size_t gpuscope_blas_drain(GpuscopeGemmCall* out, size_t max,
                                                                  uint64_t* dropped_total) {
  Ring& r = ring();
  lock(r);
  size_t n = r.size < max ? r.size : max;
  std::memcpy(out, r.calls, n * sizeof(GpuscopeGemmCall));
  std::memmove(r.calls, r.calls + n, (r.size - n) * sizeof(GpuscopeGemmCall));
  r.size -= n;
  if (dropped_total) *dropped_total = r.dropped;
  unlock(r);
  return n;
}

// cublas_api.h overloads the *Ex entry points in C++ (a cudaDataType computeType variant), so
// the function type is named through a static_cast to this definition's own signature.
#define GPUSCOPE_REAL_T(lib, name, type)               \
  static std::atomic<void*> cache_##name{nullptr};     \
  auto real_fn = real<type>(cache_##name, lib, #name); \
  if (!real_fn) return CUBLAS_STATUS_NOT_INITIALIZED
#define GPUSCOPE_REAL(lib, name) GPUSCOPE_REAL_T(lib, name, decltype(&name))

using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                                  const void*, const void*, cudaDataType, int, long long int,
                                                  const void*, cudaDataType, int, long long int, const void*, void*,
                                                  cudaDataType, int, long long int, int, cublasComputeType_t,
                                                  cublasGemmAlgo_t);
using GemmBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                           const void*, const void* const[], cudaDataType, int, const void* const[],
                                           cudaDataType, int, const void*, void* const[], cudaDataType, int, int,
                                           cublasComputeType_t, cublasGemmAlgo_t);

__attribute__((visibility("default"))) cublasStatus_t cublasLtMatmul(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
    const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
    cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
    cudaStream_t stream) {
  GPUSCOPE_REAL(kCublasLt, cublasLtMatmul);
  static std::atomic<void*> cache_layout{nullptr}, cache_desc{nullptr};
  auto layout_get =
      real<decltype(&cublasLtMatrixLayoutGetAttribute)>(cache_layout, kCublasLt, "cublasLtMatrixLayoutGetAttribute");
  auto desc_get =
      real<decltype(&cublasLtMatmulDescGetAttribute)>(cache_desc, kCublasLt, "cublasLtMatmulDescGetAttribute");
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int32_t a_type = -1, b_type = -1, d_type = -1;
  int32_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  // Outside a trace window (and nested in a recorded call, where Scope records nothing either)
  // the shape is not read: no attribute queries on the program's GEMMs while nothing records.
  if (layout_get && desc_get && Adesc && Ddesc && t_depth == 0 && recording().load(std::memory_order_relaxed)) {
    size_t written = 0;
    uint64_t rows = 0, cols = 0, a_rows = 0, a_cols = 0;
    int32_t batch_count = 1;
    uint32_t type = 0;
    desc_get(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta), &written);
    desc_get(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb), &written);
    layout_get(Ddesc, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof(rows), &written);
    layout_get(Ddesc, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof(cols), &written);
    layout_get(Ddesc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch_count, sizeof(batch_count), &written);
    if (layout_get(Ddesc, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof(type), &written) == CUBLAS_STATUS_SUCCESS)
      d_type = static_cast<int32_t>(type);
    layout_get(Adesc, CUBLASLT_MATRIX_LAYOUT_ROWS, &a_rows, sizeof(a_rows), &written);
    layout_get(Adesc, CUBLASLT_MATRIX_LAYOUT_COLS, &a_cols, sizeof(a_cols), &written);
    if (layout_get(Adesc, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof(type), &written) == CUBLAS_STATUS_SUCCESS)
      a_type = static_cast<int32_t>(type);
    if (Bdesc && layout_get(Bdesc, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof(type), &written) == CUBLAS_STATUS_SUCCESS)
      b_type = static_cast<int32_t>(type);
    m = static_cast<int64_t>(rows);
    n = static_cast<int64_t>(cols);
    // op(A) is m x k: k is A's column count unless A is transposed.
    k = static_cast<int64_t>(ta == CUBLAS_OP_N ? a_cols : a_rows);
    batch = batch_count > 0 ? batch_count : 1;
  }
  Scope scope(kGpuscopeGemmLtMatmul, m, n, k, batch, a_type, b_type, d_type, ta != CUBLAS_OP_N, tb != CUBLAS_OP_N);
  return real_fn(handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspace_bytes,
                 stream);
}

__attribute__((visibility("default"))) cublasStatus_t cublasGemmEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha,
    const void* A, cudaDataType Atype, int lda, const void* B, cudaDataType Btype, int ldb, const void* beta, void* C,
    cudaDataType Ctype, int ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  GPUSCOPE_REAL_T(kCublas, cublasGemmEx, GemmExFn);
  Scope scope(kGpuscopeGemmEx, m, n, k, 1, Atype, Btype, Ctype, is_trans(transa), is_trans(transb));
  return real_fn(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType,
                 algo);
}

__attribute__((visibility("default"))) cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha,
    const void* A, cudaDataType Atype, int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
    long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc, long long int strideC,
    int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  GPUSCOPE_REAL_T(kCublas, cublasGemmStridedBatchedEx, GemmStridedBatchedExFn);
  Scope scope(kGpuscopeGemmStridedBatchedEx, m, n, k, batchCount, Atype, Btype, Ctype, is_trans(transa),
              is_trans(transb));
  return real_fn(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype,
                 ldc, strideC, batchCount, computeType, algo);
}

__attribute__((visibility("default"))) cublasStatus_t cublasGemmBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha,
    const void* const Aarray[], cudaDataType Atype, int lda, const void* const Barray[], cudaDataType Btype, int ldb,
    const void* beta, void* const Carray[], cudaDataType Ctype, int ldc, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  GPUSCOPE_REAL_T(kCublas, cublasGemmBatchedEx, GemmBatchedExFn);
  Scope scope(kGpuscopeGemmBatchedEx, m, n, k, batchCount, Atype, Btype, Ctype, is_trans(transa), is_trans(transb));
  return real_fn(handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, Barray, Btype, ldb, beta, Carray, Ctype,
                 ldc, batchCount, computeType, algo);
}

// cudaDataType_t values used below: CUDA_R_32F 0, CUDA_R_64F 1, CUDA_R_16F 2.
#define GPUSCOPE_TYPED_GEMM(name, api, T, type)                                                                       \
  __attribute__((visibility("default"))) cublasStatus_t name(                                                         \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const T* alpha, \
      const T* A, int lda, const T* B, int ldb, const T* beta, T* C, int ldc) {                                       \
    GPUSCOPE_REAL(kCublas, name);                                                                                     \
    Scope scope(api, m, n, k, 1, type, type, type, is_trans(transa), is_trans(transb));                               \
    return real_fn(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);                             \
  }

#define GPUSCOPE_STRIDED_GEMM(name, api, T, type)                                                                     \
  __attribute__((visibility("default"))) cublasStatus_t name(                                                         \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const T* alpha, \
      const T* A, int lda, long long int strideA, const T* B, int ldb, long long int strideB, const T* beta, T* C,    \
      int ldc, long long int strideC, int batchCount) {                                                               \
    GPUSCOPE_REAL(kCublas, name);                                                                                     \
    Scope scope(api, m, n, k, batchCount, type, type, type, is_trans(transa), is_trans(transb));                      \
    return real_fn(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,   \
                   batchCount);                                                                                       \
  }

GPUSCOPE_TYPED_GEMM(cublasSgemm_v2, kGpuscopeSgemm, float, 0)
GPUSCOPE_TYPED_GEMM(cublasDgemm_v2, kGpuscopeDgemm, double, 1)
GPUSCOPE_TYPED_GEMM(cublasHgemm, kGpuscopeHgemm, __half, 2)
GPUSCOPE_STRIDED_GEMM(cublasSgemmStridedBatched, kGpuscopeSgemmStridedBatched, float, 0)
GPUSCOPE_STRIDED_GEMM(cublasDgemmStridedBatched, kGpuscopeDgemmStridedBatched, double, 1)
GPUSCOPE_STRIDED_GEMM(cublasHgemmStridedBatched, kGpuscopeHgemmStridedBatched, __half, 2)

}  // extern "C"
