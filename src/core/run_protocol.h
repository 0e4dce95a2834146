// The `gpuscope run` protocol, written once: every environment variable gpuscope's parts set or
// read (gpuscope run, the injection libraries, the Python bootstrap, the readers), and every
// NVTX range and mark name the bootstrap writes and the core reads. C++ code names them through
// these constants, never as string literals; the Python bootstrap cannot include this header,
// so src/python/protocol_test.py parses the tables below and checks the package against them
// (every name and key it uses is here, and every one here that it writes or reads, it does).
// Keep each row on the lines of one initializer: that test reads them.
//
// No NVIDIA header, nothing but constants: the injection libraries include it too.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace gpuscope::run_protocol {

// Who sets or reads a variable, who writes or reads a mark (bits).
enum Party : uint16_t {
  kUser = 1 << 0,       // The person who starts gpuscope (a knob).
  kRun = 1 << 1,        // `gpuscope run` (src/cli/cmd_run.cpp, run_*.cpp).
  kInject = 1 << 2,     // libgpuscope_inject.so, the CUPTI injection library (src/cupti/inject.cpp).
  kBlas = 1 << 3,       // libgpuscope_blas.so, the cuBLAS shape interposer (src/cupti/blas_interpose.cpp).
  kBootstrap = 1 << 4,  // The Python bootstrap (src/python/gpuscope_boot).
  kProgram = 1 << 5,    // The traced program, or a launcher that starts it (torchrun).
  kCore = 1 << 6,       // The analysis (src/core), for `analyze`, `run`'s report and `diff`.
  kGpuscope = 1 << 7,   // The gpuscope binary's other parts: readers, the live commands, library lookup.
  kLoader = 1 << 8,     // The system: the CUDA driver, NVTX, ld.so, the Python interpreter.
  kTests = 1 << 9,      // The test harness (ctest, the tests, the fakes and the simulator).
};

// One environment variable. `default_value` is what an unset variable means.
struct EnvVar {
  const char* name;
  uint16_t set_by;
  uint16_t read_by;
  const char* default_value;
  const char* meaning;
};

// --- What `gpuscope run` hands the traced program --------------------------------------------

inline constexpr EnvVar kEnvRun{"GPUSCOPE_RUN", kRun, kProgram, "unset",
                                "1 in every process gpuscope run starts (a program may ask whether it is traced)"};
inline constexpr EnvVar kEnvPython{
    "GPUSCOPE_PYTHON", kUser, kRun | kBootstrap, "1",
    "0: no Python bootstrap (run leaves PYTHONPATH alone; a bootstrap already on it does nothing)"};
inline constexpr EnvVar kEnvCapturePrefix{
    "GPUSCOPE_CAPTURE_PREFIX", kRun, kInject, "gpuscope",
    "path prefix of the capture each traced process creates, <prefix>.<pid>.gpuscope"};
inline constexpr EnvVar kEnvTraceDeferred{
    "GPUSCOPE_TRACE_DEFERRED", kRun, kInject | kBlas, "unset",
    "1 (--steps): device records only until the bootstrap opens the window through gpuscope_trace_control"};
inline constexpr EnvVar kEnvTraceAfterMs{"GPUSCOPE_TRACE_AFTER_MS", kRun, kInject, "0",
                                         "--after: the window opens this long after CUDA started"};
inline constexpr EnvVar kEnvTraceForMs{
    "GPUSCOPE_TRACE_FOR_MS", kRun, kInject, "0",
    "--for, and a plain run's time cap: the window closes this long after it opened (0: never)"};
inline constexpr EnvVar kEnvSteps{
    "GPUSCOPE_STEPS", kRun, kBootstrap, "0",
    "--steps N: the bootstrap opens the window after GPUSCOPE_SKIP_STEPS steps and closes it after N more"};
inline constexpr EnvVar kEnvSkipSteps{"GPUSCOPE_SKIP_STEPS", kRun, kBootstrap, "0",
                                      "--skip-steps K: the untraced warm-up steps before a --steps window"};
inline constexpr EnvVar kEnvMaxSteps{"GPUSCOPE_MAX_STEPS", kRun, kBootstrap, "0",
                                     "a plain run's step cap: tracing stops after this many steps (0: never)"};

// --- Knobs of the injection library ---------------------------------------------------------

inline constexpr EnvVar kEnvDisable{"GPUSCOPE_DISABLE", kUser, kInject, "unset",
                                    "1: the injection library traces nothing"};
inline constexpr EnvVar kEnvCompress{"GPUSCOPE_COMPRESS", kUser, kInject, "1", "0: capture chunks are not compressed"};
inline constexpr EnvVar kEnvDriverApi{"GPUSCOPE_DRIVER_API", kUser, kInject, "unset",
                                      "all: record every driver API call, not only the launch entry points"};
inline constexpr EnvVar kEnvRuntimeApi{"GPUSCOPE_RUNTIME_API", kUser, kInject, "unset",
                                       "all: record runtime calls that only ask a question too (cudaGetDevice, ...)"};
inline constexpr EnvVar kEnvHandleSignals{"GPUSCOPE_HANDLE_SIGNALS", kUser, kInject, "1",
                                          "0: no flush on SIGTERM/SIGINT left at their default action"};
inline constexpr EnvVar kEnvDetach{
    "GPUSCOPE_DETACH", kUser, kInject, "0",
    "1: after a bounded window, detach CUPTI (cuptiFinalize) at the next CUDA runtime call's exit; "
    "otherwise it stays attached, every kind off"};
inline constexpr EnvVar kEnvVerbose{"GPUSCOPE_VERBOSE", kUser, kInject, "unset",
                                    "set: the injection library says what it enables"};
inline constexpr EnvVar kEnvKindsOff{
    "GPUSCOPE_KINDS_OFF", kUser, kInject, "unset",
    "comma-separated optional activity kinds not to record (MEMCPY, MEMSET, RUNTIME, ...)"};
inline constexpr EnvVar kEnvKindsOn{"GPUSCOPE_KINDS_ON", kUser, kInject, "unset",
                                    "comma-separated activity kinds off by default to record too (SYNCHRONIZATION)"};

// --- Knobs of the Python bootstrap ------------------------------------------------------------

inline constexpr EnvVar kEnvPySampleHz{
    "GPUSCOPE_PY_SAMPLE_HZ", kUser, kBootstrap, "100",
    "stack samples per second of the thread that issues GPU work (0 to 500; 0: no gpuscope.py# marks)"};
inline constexpr EnvVar kEnvLoop{"GPUSCOPE_LOOP", kUser, kBootstrap, "1", "0: no search for the step loop"};
inline constexpr EnvVar kEnvLoaderProbe{"GPUSCOPE_LOADER_PROBE", kUser, kBootstrap, "1",
                                        "0: no forked copy timing what DataLoader workers would deliver"};
inline constexpr EnvVar kEnvStepWaitS{
    "GPUSCOPE_STEP_WAIT_S", kUser, kBootstrap, "20",
    "seconds after CUDA started without a step source before a --steps window opens by time"};
inline constexpr EnvVar kEnvFallbackS{"GPUSCOPE_FALLBACK_S", kUser, kBootstrap, "10",
                                      "seconds a window opened by time (no step source) stays open"};
inline constexpr EnvVar kEnvFineLoopS{"GPUSCOPE_FINE_LOOP_S", kUser, kBootstrap, "5",
                                      "seconds a capped plain run traces a step loop too fast to mark"};

// --- A trial of `gpuscope run --try` (src/cli/run_try.h; nothing else sets these) -------------

inline constexpr EnvVar kEnvTry{"GPUSCOPE_TRY", kRun, kBootstrap, "unset",
                                "the fixes the trial applies (comma-separated; empty: the program as it is)"};
inline constexpr EnvVar kEnvTryResult{"GPUSCOPE_TRY_RESULT", kRun, kBootstrap, "unset",
                                      "set: this run is a trial; the file its measurement is written to"};
inline constexpr EnvVar kEnvTryWarmup{"GPUSCOPE_TRY_WARMUP", kRun, kBootstrap, "0", "steps a trial runs before timing"};
inline constexpr EnvVar kEnvTryWorkers{
    "GPUSCOPE_TRY_WORKERS", kUser, kBootstrap, "unset",
    "the dataloader fix's workers (default: one per CPU beside the main process, at most 8)"};

// --- What else `gpuscope run` sets, and what launchers set --------------------------------------

inline constexpr EnvVar kEnvCudaInjection{
    "CUDA_INJECTION64_PATH", kRun, kLoader | kBootstrap, "unset",
    "the injection library the CUDA driver loads at cuInit; the bootstrap finds gpuscope_trace_control in it"};
inline constexpr EnvVar kEnvNvtxInjection{"NVTX_INJECTION64_PATH", kRun, kLoader, "unset",
                                          "the injection library NVTX loads (its ranges and marks go to CUPTI)"};
inline constexpr EnvVar kEnvLdPreload{"LD_PRELOAD", kRun | kUser, kLoader, "unset",
                                      "libgpuscope_blas.so first, then the program's own preloads"};
inline constexpr EnvVar kEnvPythonPath{"PYTHONPATH", kRun | kUser, kLoader, "unset",
                                       "the bootstrap folder first, then the program's own entries"};
inline constexpr EnvVar kEnvRank{"RANK", kProgram, kInject, "unset", "the process's rank, recorded in its capture"};
inline constexpr EnvVar kEnvWorldSize{"WORLD_SIZE", kProgram, kInject, "unset",
                                      "the job's world size, recorded in its capture"};
inline constexpr EnvVar kEnvNoCaching{"PYTORCH_NO_CUDA_MEMORY_CACHING", kProgram, kBootstrap, "unset",
                                      "PyTorch's caching allocator off: the allocator marks' alloc_uncached"};
inline constexpr EnvVar kEnvCudaAllocConf{"PYTORCH_CUDA_ALLOC_CONF", kProgram, kBootstrap, "unset",
                                          "PyTorch's allocator settings: the allocator marks' alloc_expandable"};
inline constexpr EnvVar kEnvAllocConf{"PYTORCH_ALLOC_CONF", kProgram, kBootstrap, "unset",
                                      "the same, under its newer name"};
inline constexpr EnvVar kEnvLocalWorldSize{
    "LOCAL_WORLD_SIZE", kProgram, kBootstrap, "1",
    "processes on this node: unpinned ones share its CPUs (the loader marks' cpus)"};

// --- gpuscope's own knobs ------------------------------------------------------------------

inline constexpr EnvVar kEnvLibDir{"GPUSCOPE_LIB_DIR", kUser, kRun | kGpuscope, "unset",
                                   "where gpuscope's libraries and the bootstrap are looked for first"};
inline constexpr EnvVar kEnvNvmlLibrary{"GPUSCOPE_NVML_LIBRARY", kUser | kTests, kGpuscope, "libnvidia-ml.so.1",
                                        "the NVML library the sampler loads"};
inline constexpr EnvVar kEnvProcRoot{"GPUSCOPE_PROC_ROOT", kUser | kTests, kGpuscope, "/proc",
                                     "the host's /proc where it is mounted elsewhere (the live commands)"};
inline constexpr EnvVar kEnvMaxInflate{"GPUSCOPE_MAX_INFLATE", kUser, kGpuscope, "unset",
                                       "the most a compressed input may inflate to (as --max-inflate)"};
inline constexpr EnvVar kEnvInputTimeout{"GPUSCOPE_INPUT_TIMEOUT", kUser, kGpuscope, "unset",
                                         "seconds a reader waits for data on a pipe or FIFO"};
inline constexpr EnvVar kEnvThreads{"GPUSCOPE_THREADS", kUser, kGpuscope, "unset", "threads the trace readers use"};

// --- Tests only ---------------------------------------------------------------------------------

inline constexpr EnvVar kEnvSimKernels{"GPUSCOPE_SIM_KERNELS", kTests, kTests, "10",
                                       "kernels the simulated injection library writes"};
inline constexpr EnvVar kEnvSimNcclUs{
    "GPUSCOPE_SIM_NCCL_US", kTests, kTests, "0",
    "the simulated injection library's NCCL kernel after each kernel, in microseconds"};
inline constexpr EnvVar kEnvSimGapUs{"GPUSCOPE_SIM_GAP_US", kTests, kTests, "1000",
                                     "the simulated injection library's gap after each kernel, in microseconds"};
inline constexpr EnvVar kEnvFakeNvmlFixture{"GPUSCOPE_FAKE_NVML_FIXTURE", kTests, kTests, "unset",
                                            "the fixture the fake NVML library serves"};
inline constexpr EnvVar kEnvSourceDir{"GPUSCOPE_SOURCE_DIR", kTests, kTests, "unset",
                                      "the source tree, for tests that read testdata/"};
inline constexpr EnvVar kEnvUpdateGoldens{"GPUSCOPE_UPDATE_GOLDENS", kUser, kTests, "unset",
                                          "1: golden tests rewrite their expected outputs"};
inline constexpr EnvVar kEnvTestPython312{"GPUSCOPE_TEST_PYTHON312", kUser, kTests, "unset",
                                          "a Python 3.12+ for the step loop's tests"};
inline constexpr EnvVar kEnvTestSimLib{"GPUSCOPE_TEST_SIM_LIB", kTests, kTests, "unset",
                                       "the simulated injection library, for tests/cli_test.py"};
inline constexpr EnvVar kEnvTestFakeCuda{"GPUSCOPE_TEST_FAKE_CUDA", kTests, kTests, "unset",
                                         "the fake CUDA program, for tests/cli_test.py"};

inline constexpr std::array kEnvironment = {
    kEnvRun,        kEnvPython,        kEnvCapturePrefix, kEnvTraceDeferred, kEnvTraceAfterMs,
    kEnvTraceForMs, kEnvSteps,         kEnvSkipSteps,     kEnvMaxSteps,      kEnvDisable,
    kEnvCompress,   kEnvDriverApi,     kEnvRuntimeApi,    kEnvHandleSignals, kEnvVerbose,
    kEnvKindsOff,   kEnvKindsOn,       kEnvPySampleHz,    kEnvLoop,          kEnvLoaderProbe,
    kEnvStepWaitS,  kEnvFallbackS,     kEnvFineLoopS,     kEnvCudaInjection, kEnvNvtxInjection,
    kEnvLdPreload,  kEnvPythonPath,    kEnvRank,          kEnvWorldSize,     kEnvLocalWorldSize,
    kEnvLibDir,     kEnvNvmlLibrary,   kEnvProcRoot,      kEnvMaxInflate,    kEnvInputTimeout,
    kEnvThreads,    kEnvSimKernels,    kEnvSimNcclUs,     kEnvSimGapUs,      kEnvFakeNvmlFixture,
    kEnvSourceDir,  kEnvUpdateGoldens, kEnvTestPython312, kEnvTestSimLib,    kEnvTestFakeCuda,
    kEnvTry,        kEnvTryResult,     kEnvTryWarmup,     kEnvTryWorkers,    kEnvDetach,
    kEnvNoCaching,  kEnvCudaAllocConf, kEnvAllocConf,
};

// The injection library's one entry point beside the driver's: the bootstrap opens (1) and
// closes (0) a bounded window with it, through ctypes on CUDA_INJECTION64_PATH.
inline constexpr const char* kTraceControlSymbol = "gpuscope_trace_control";

// --- NVTX names -------------------------------------------------------------------------------

enum class NameKind : uint8_t { kRange, kMark };

// An NVTX range or mark told apart by its name: `prefix` starts it (or is all of it, `exact`).
// Written by `written_by` (0: only by older gpuscope versions; still read).
struct NvtxName {
  std::string_view prefix;
  NameKind kind;
  bool exact;
  uint16_t written_by;
  uint16_t read_by;
  const char* form;
  const char* meaning;
};

// PyTorch's profiler writes the first two names for the same work, so one rule reads both.
inline constexpr NvtxName kOptimizerStepRange{"Optimizer.step#",
                                              NameKind::kRange,
                                              false,
                                              kBootstrap | kProgram,
                                              kCore,
                                              "Optimizer.step#<Class>.step[#<n>]",
                                              "one optimizer step (global step hooks); <n>: the "
                                              "nth optimizer the program steps, from the 2nd on"};
inline constexpr NvtxName kDataLoaderRange{"enumerate(DataLoader)#",
                                           NameKind::kRange,
                                           false,
                                           kBootstrap | kProgram,
                                           kCore,
                                           "enumerate(DataLoader)#<Iterator>.__next__",
                                           "one batch fetched from a DataLoader"};
inline constexpr NvtxName kStepLoopRange{"gpuscope.iter#",
                                         NameKind::kRange,
                                         false,
                                         kBootstrap,
                                         kCore,
                                         "gpuscope.iter#<file>:<line>",
                                         "one iteration of the program's step loop"};
inline constexpr NvtxName kPySampleMark{
    "gpuscope.py#",
    NameKind::kMark,
    false,
    kBootstrap,
    kCore,
    "gpuscope.py#<tag>;<file>:<line> <function>|...",
    "a stack sample of the thread that issues GPU work; tag `data` in data loading"};
inline constexpr NvtxName kHostMark{"gpuscope.host#",
                                    NameKind::kMark,
                                    false,
                                    kBootstrap,
                                    kCore | kRun,
                                    "gpuscope.host#<key>=<integer>,...",
                                    "a fact about the process (kHostMarks)"};
inline constexpr NvtxName kBootStatsMark{"gpuscope.python#",
                                         NameKind::kMark,
                                         false,
                                         kBootstrap,
                                         0,
                                         "gpuscope.python#ranges=R,samples=S,hook_errors=E",
                                         "at exit: what the bootstrap emitted and the errors its hooks swallowed"};
inline constexpr NvtxName kForwardRange{"gpuscope.forward#",
                                        NameKind::kRange,
                                        false,
                                        0,
                                        kCore,
                                        "gpuscope.forward#<Module>",
                                        "an outermost forward pass (older captures)"};
inline constexpr NvtxName kBackwardRange{"gpuscope.backward",
                                         NameKind::kRange,
                                         true,
                                         0,
                                         kCore,
                                         "gpuscope.backward",
                                         "an autograd backward pass (older captures)"};

inline constexpr std::array kNvtxNames = {kOptimizerStepRange, kDataLoaderRange, kStepLoopRange, kPySampleMark,
                                          kHostMark,           kBootStatsMark,   kForwardRange,  kBackwardRange};

// The tag of a stack sample taken with a data-loading frame (torch/utils/data) on the stack.
inline constexpr std::string_view kPySampleDataTag = "data";

// --- Keys of the host marks and the stats mark --------------------------------------------------

inline constexpr std::string_view kKeyCpus = "cpus";
inline constexpr std::string_view kKeyTorchThreads = "torch_threads";
inline constexpr std::string_view kKeyLoaderWorkers = "loader_workers";
inline constexpr std::string_view kKeyLoaderCpuUs = "loader_cpu_us";
inline constexpr std::string_view kKeyLoaderWallUs = "loader_wall_us";
inline constexpr std::string_view kKeyLoaderOneThreadUs = "loader_one_thread_us";
inline constexpr std::string_view kKeyLoaderOneThreadCpuUs = "loader_one_thread_cpu_us";
inline constexpr std::string_view kKeyLoaderPoolUs = "loader_pool_us";
inline constexpr std::string_view kKeyPoolWorkers = "pool_workers";
inline constexpr std::string_view kKeyBatches = "batches";
inline constexpr std::string_view kKeyDistWorldSize = "dist_world_size";
inline constexpr std::string_view kKeyDistGloo = "dist_gloo";
inline constexpr std::string_view kKeyUntracedStepUs = "untraced_step_us";
inline constexpr std::string_view kKeyUntracedDeviceStepUs = "untraced_device_step_us";
inline constexpr std::string_view kKeySteps = "steps";
inline constexpr std::string_view kKeyOptimizerSteps = "optimizer_steps";
inline constexpr std::string_view kKeyTimeWindowUs = "time_window_us";
inline constexpr std::string_view kKeyNoSteps = "no_steps";
inline constexpr std::string_view kKeyLoopPeriodNs = "loop_period_ns";
inline constexpr std::string_view kKeyCappedAfterSteps = "capped_after_steps";
inline constexpr std::string_view kKeyCappedAfterUs = "capped_after_us";
inline constexpr std::string_view kKeyAllocRetries = "alloc_retries";
inline constexpr std::string_view kKeyAllocUncached = "alloc_uncached";
inline constexpr std::string_view kKeyAllocExpandable = "alloc_expandable";
inline constexpr std::string_view kKeyAllocRetriesAtOpen = "alloc_retries_at_open";
inline constexpr std::string_view kKeyRanges = "ranges";
inline constexpr std::string_view kKeySamples = "samples";
inline constexpr std::string_view kKeyHookErrors = "hook_errors";

// One mark the bootstrap writes: its prefix and keys in the order written (integer values),
// when, and who reads it. core/host_marks.h parses them all.
struct FieldMark {
  const NvtxName* mark;
  std::array<std::string_view, 3> keys;  // Unused slots are empty.
  uint16_t read_by;
  const char* when;
};

inline constexpr std::array kFieldMarks = {
    FieldMark{&kHostMark,
              {kKeyCpus, kKeyTorchThreads},
              kCore,
              "once per process, at the first batch built in the main process (num_workers=0)"},
    FieldMark{
        &kHostMark, {kKeyCpus, kKeyLoaderWorkers}, kCore, "once per process, at a batch of a loader with workers"},
    FieldMark{&kHostMark,
              {kKeyLoaderCpuUs, kKeyLoaderWallUs},
              kCore,
              "after each batch built in the main process: its CPU time (all threads) and wall time"},
    FieldMark{&kHostMark,
              {kKeyLoaderOneThreadUs, kKeyBatches, kKeyLoaderOneThreadCpuUs},
              kCore,
              "once, the forked copy's time per batch with torch on one thread, the batches it timed, and its CPU "
              "time per batch (every thread)"},
    FieldMark{&kHostMark,
              {kKeyLoaderPoolUs, kKeyPoolWorkers, kKeyBatches},
              kCore,
              "once, the time between batches of the copy's DataLoader with the advised workers"},
    FieldMark{&kHostMark,
              {kKeyDistWorldSize, kKeyDistGloo},
              kCore,
              "once, at the first optimizer step with a process group: whether CUDA tensors go through gloo"},
    FieldMark{&kHostMark,
              {kKeyUntracedStepUs, kKeySteps},
              kCore,
              "as a --steps window opens: the median untraced step on the host, over `steps` periods"},
    FieldMark{&kHostMark, {kKeyOptimizerSteps}, kCore, "as a --steps window opens: the optimizer steps before it"},
    FieldMark{&kHostMark,
              {kKeyUntracedDeviceStepUs, kKeySteps},
              kCore,
              "as a --steps window closes: the median untraced step on the GPU's timeline"},
    FieldMark{
        &kHostMark, {kKeyTimeWindowUs, kKeyNoSteps}, 0, "a --steps window opened by time: no step source appeared"},
    FieldMark{&kHostMark,
              {kKeyTimeWindowUs, kKeyLoopPeriodNs},
              0,
              "a --steps window opened by time: the step loop turns too fast to mark"},
    FieldMark{&kHostMark, {kKeyCappedAfterSteps}, kRun, "a plain run's trace stopped after its step cap"},
    FieldMark{&kHostMark,
              {kKeyCappedAfterUs, kKeyLoopPeriodNs},
              kRun,
              "a plain run's trace stopped: its step loop turns too fast to mark"},
    FieldMark{&kHostMark,
              {kKeyAllocRetries, kKeyAllocUncached, kKeyAllocExpandable},
              kCore,
              "where the trace ends (a window's close, a step cap, exit): the caching allocator's retries so far "
              "(torch.cuda.memory_stats num_alloc_retries), whether PYTORCH_NO_CUDA_MEMORY_CACHING turns it off, "
              "whether expandable segments are on"},
    FieldMark{&kHostMark,
              {kKeyAllocRetriesAtOpen},
              kCore,
              "as a --steps window opens: the caching allocator's retries so far"},
    FieldMark{&kBootStatsMark, {kKeyRanges, kKeySamples, kKeyHookErrors}, 0, "at exit, when anything was emitted"},
};

}  // namespace gpuscope::run_protocol
