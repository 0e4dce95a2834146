// libgpuscope_inject.so: loaded into the traced process by the CUDA driver
// (CUDA_INJECTION64_PATH, which calls InitializeInjection during cuInit) and by NVTX
// (NVTX_INJECTION64_PATH, which calls InitializeInjectionNvtx2), both set by `gpuscope run`.
//
// What runs where:
// - CUPTI hands full activity buffers to buffer_completed() (on CUPTI's or an application
//   thread); that only queues the buffer and wakes the writer thread.
// - The writer thread decodes buffers (ActivityDecoder), drains GEMM calls from
//   libgpuscope_blas.so, and appends chunks to the capture. It asks CUPTI for completed buffers
//   every kFlushPeriodMs so a killed process loses at most that much. Buffers are handed to
//   CUPTI already zeroed (new ones from calloc, used ones cleared by the writer thread), so
//   CUPTI does not clear 4 MiB on the program's thread each time it asks for one.
// - At exit (atexit), SIGTERM/SIGINT (only where the program left them at the default action),
//   everything is flushed and a final stats record marks a clean end.
//
// Bounded tracing (`gpuscope run --steps N`, `--after/--for`): with GPUSCOPE_TRACE_DEFERRED=1
// nothing is recorded until the window opens, either when the Python bootstrap has seen the
// warm-up steps (gpuscope_trace_control(1)) or GPUSCOPE_TRACE_AFTER_MS after initialisation.
// The window closes on gpuscope_trace_control(0) or GPUSCOPE_TRACE_FOR_MS after it opened: the
// writer thread turns every kind off, flushes and decodes what CUPTI holds, and from then on
// makes no CUPTI call: CUPTI stays attached with nothing recorded (no cuptiFinalize). Detaching
// it (cuptiFinalize) killed traced programs: on an H100, 3 of 13 runs of a 0.4 ms decode loop
// under `--steps 50`, each window traced, were killed by SIGSEGV or SIGABRT when the detach ran in
// a callback at a runtime call's exit (as CUPTI's documentation asks and PyTorch's profiler does
// it), 2 of 15 when it ran at any CUDA call's exit, against 0 of 19 left attached; a CUDA graph's
// replays failed after it (below). GPUSCOPE_DETACH=1 asks for that detach anyway: the next
// CUDA runtime call of any program thread performs it at its exit, its subscriber removed first;
// the tracer's threads make no CUPTI call from the request on (one would attach CUPTI again).
//
// Never harm the program: no exception leaves any entry point, nothing calls exit(), and when
// anything fails the library prints one line on stderr ("gpuscope: ...") and turns itself off.
// Fork: a forked child inherits no writer thread, so the child never writes (its parent's file
// is not touched); CUDA cannot be used in such a child anyway. Exec: the new image is traced
// afresh through the environment into a capture of its own (`<prefix>.<pid>-2.gpuscope`); events
// since the last flush of the old image are lost.
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capture/capture_writer.h"
#include "core/clock.h"
#include "core/run_protocol.h"
#include "cupti/activity_decoder.h"
#include "cupti/gemm_calls.h"

namespace gpuscope::cupti {
namespace {

// GPUSCOPE_DISABLE=1: the program runs untraced, NVTX without a tool.
bool tracing_disabled() {
  const char* off = std::getenv(run_protocol::kEnvDisable.name);
  return off && std::strcmp(off, "1") == 0;
}

constexpr size_t kBufferBytes = 4 << 20;
constexpr size_t kMaxBuffers = 64;  // 256 MiB of unwritten records at most; then CUPTI drops.
constexpr int kFlushPeriodMs = 1000;
constexpr int kSignalFlushTimeoutMs = 3000;
constexpr int kExitTimeoutMs = 10000;

uint64_t CUPTIAPI cupti_timestamp() { return static_cast<uint64_t>(realtime_ns()); }

struct Buffer {
  uint8_t* data;
  size_t valid_bytes;
};

class Tracer {
 public:
  static Tracer& get() {
    static Tracer* t = new Tracer();  // Never destroyed: CUPTI may call back during teardown.
    return *t;
  }

  int initialize();
  void shutdown();
  void on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  void on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid);
  void on_signal(int sig);
  void on_api_exit();
  bool open_window();
  bool request_close();
  void on_fork_prepare() { queue_mutex_.lock(); }
  void on_fork_parent() { queue_mutex_.unlock(); }
  void on_fork_child() {
    queue_mutex_.unlock();
    forked_child_ = true;
    enabled_ = false;
  }

 private:
  void disable(const std::string& why);
  bool check(CUptiResult rc, const char* call, bool fatal);
  void writer_loop();
  void process_queue();
  void drain_gemms();
  void write_stats(bool clean_exit);
  void write_process_record();
  void install_signal_handlers();
  bool enable_kinds();
  void close_window();
  void check_window_deadlines();
  // Whether the tracer's threads may call CUPTI: not once a detach is asked for.
  bool cupti_callable() const {
    const int w = window_.load();
    return w != kDetaching && w != kDone;
  }

  // The trace window: the whole run (kAlways), or waiting / open / closing / detaching (every
  // kind off, the detach asked for) / done (detached, or left attached with nothing recorded).
  enum Window : int { kAlways, kWaiting, kOpen, kClosing, kDetaching, kDone };
  std::atomic<int> window_{kAlways};
  std::mutex window_mutex_;
  int64_t open_at_ns_ = 0;   // Realtime deadline to open a waiting window; 0: on request only.
  int64_t open_for_ns_ = 0;  // Window length once open; 0: until closed by request.
  std::atomic<int64_t> close_at_ns_{0};
  std::vector<CUpti_ActivityKind> kinds_on_;

  std::atomic<bool> enabled_{false};
  std::atomic<bool> detach_pending_{false};  // The next CUDA runtime call's exit detaches CUPTI.
  CUpti_SubscriberHandle detach_subscriber_ = nullptr;
  std::atomic<bool> initialized_{false};
  bool graph_launched_ = false;  // A CUDA graph launch was recorded (writer thread only).
  bool forked_child_ = false;
  std::atomic<bool> warned_{false};
  std::atomic<bool> shutting_down_{false};

  capture::CaptureWriter writer_;
  std::unique_ptr<ActivityDecoder> decoder_;
  std::thread thread_;
  int wake_pipe_[2] = {-1, -1};  // Writer thread wake-ups: 'B' buffer, 'T' signal, 'S' stop.
  int ack_pipe_[2] = {-1, -1};   // Writer -> signal handler: flushed.
  std::mutex queue_mutex_;
  std::deque<Buffer> queue_;
  std::vector<uint8_t*> free_buffers_;
  size_t allocated_buffers_ = 0;
  std::atomic<uint64_t> dropped_buffers_{0};
  std::atomic<uint64_t> dropped_records_{0};
  uint64_t gemm_dropped_ = 0;
  GpuscopeBlasDrainFn blas_drain_ = nullptr;
  std::vector<GpuscopeGemmCall> gemm_scratch_;
  uint32_t gemm_api_ids_[kGpuscopeGemmApiCount] = {};
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::string path_;
};

void Tracer::disable(const std::string& why) {
  enabled_ = false;
  if (!warned_.exchange(true)) {
    std::fprintf(stderr, "gpuscope: tracing disabled in pid %d: %s; the program runs untraced\n",
                 static_cast<int>(getpid()), why.c_str());
  }
}

// The one place CUPTI return codes become messages: the call and CUPTI's own text.
bool Tracer::check(CUptiResult rc, const char* call, bool fatal) {
  if (rc == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  cuptiGetResultString(rc, &text);
  std::string msg = std::string(call) + " failed: " + (text ? text : "unknown error") + " (" +
                    std::to_string(static_cast<int>(rc)) + ")";
  if (fatal) disable(msg);
  return false;
}

// Runtime calls only: a runtime call is the outermost (the driver calls it makes are nested in
// it), so at its exit no CUDA call of this thread is still inside CUPTI.
void CUPTIAPI detach_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && info && info->callbackSite == CUPTI_API_EXIT)
    Tracer::get().on_api_exit();
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  Tracer::get().on_buffer_requested(buffer, size, max_records);
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  Tracer::get().on_buffer_completed(ctx, stream, buffer, size, valid);
}

void Tracer::on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(queue_mutex_);
  uint8_t* b = nullptr;
  if (!free_buffers_.empty()) {
    b = free_buffers_.back();
    free_buffers_.pop_back();
  } else if (allocated_buffers_ < kMaxBuffers) {
    // calloc: fresh zero pages, no clearing on this (the program's) thread; CUPTI needs 8-byte
    // alignment, malloc gives 16.
    b = static_cast<uint8_t*>(std::calloc(1, kBufferBytes));
    if (b) ++allocated_buffers_;
  }
  if (!b) {
    // CUPTI drops records while no buffer is given; they are counted by CUPTI as dropped.
    ++dropped_buffers_;
    return;
  }
  *buffer = b;
  *size = kBufferBytes;
}

void Tracer::on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  if (!buffer) return;
  if (!cupti_callable()) {
    // Closed (close_window): what CUPTI still holds is after the window.
    std::memset(buffer, 0, kBufferBytes);
    std::lock_guard<std::mutex> lock(queue_mutex_);
    free_buffers_.push_back(buffer);
    return;
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
    dropped_records_ += dropped;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    if (forked_child_) return;
    queue_.push_back({buffer, valid});
  }
  char b = 'B';
  if (wake_pipe_[1] >= 0) (void)!write(wake_pipe_[1], &b, 1);
}

// A record of a CUDA graph launch: its runtime or driver API call, or a kernel that ran inside a
// graph (a window that opens mid-run may lack the driver's API records: docs/run.md).
bool is_graph_launch(const CUpti_Activity& r) {
  if (r.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r.kind == CUPTI_ACTIVITY_KIND_KERNEL) {
    return reinterpret_cast<const CUpti_ActivityKernel10&>(r).graphId != 0;
  }
  if (r.kind != CUPTI_ACTIVITY_KIND_RUNTIME && r.kind != CUPTI_ACTIVITY_KIND_DRIVER) return false;
  const auto& api = reinterpret_cast<const CUpti_ActivityAPI&>(r);
  if (r.kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
    return api.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
           api.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
  }
  return api.cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || api.cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

void Tracer::process_queue() {
  for (;;) {
    Buffer buf;
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      if (queue_.empty()) return;
      buf = queue_.front();
      queue_.pop_front();
    }
    CUpti_Activity* record = nullptr;
    while (buf.valid_bytes > 0 && cuptiActivityGetNextRecord(buf.data, buf.valid_bytes, &record) == CUPTI_SUCCESS) {
      if (!graph_launched_ && is_graph_launch(*record)) graph_launched_ = true;
      decoder_->decode(*record);
    }
    std::memset(buf.data, 0, kBufferBytes);  // Zeroed for CUPTI (ZEROED_OUT_ACTIVITY_BUFFER).
    std::lock_guard<std::mutex> lock(queue_mutex_);
    free_buffers_.push_back(buf.data);
  }
}

void Tracer::drain_gemms() {
  if (!blas_drain_) {
    blas_drain_ = reinterpret_cast<GpuscopeBlasDrainFn>(dlsym(RTLD_DEFAULT, "gpuscope_blas_drain"));
    if (!blas_drain_) return;
  }
  gemm_scratch_.resize(4096);
  for (;;) {
    size_t n = blas_drain_(gemm_scratch_.data(), gemm_scratch_.size(), &gemm_dropped_);
    for (size_t i = 0; i < n; ++i) {
      const GpuscopeGemmCall& c = gemm_scratch_[i];
      uint16_t api = c.api < kGpuscopeGemmApiCount ? c.api : 0;
      if (gemm_api_ids_[api] == 0) gemm_api_ids_[api] = writer_.intern(gemm_api_name(api));
      capture::GemmRecord r;
      r.start_ns = c.start_ns;
      r.end_ns = c.end_ns;
      r.tid = c.tid;
      r.api = gemm_api_ids_[api];
      r.m = c.m;
      r.n = c.n;
      r.k = c.k;
      r.batch = c.batch;
      r.a_type = c.a_type;
      r.b_type = c.b_type;
      r.c_type = c.c_type;
      r.transposes = static_cast<uint8_t>((c.trans_a ? 1 : 0) | (c.trans_b ? 2 : 0));
      writer_.add(r);
    }
    if (n < gemm_scratch_.size()) return;
  }
}

void Tracer::write_stats(bool clean_exit) {
  capture::StatsRecord s;
  s.records = writer_.records();
  s.dropped_records = dropped_records_ + gemm_dropped_;
  s.dropped_buffers = dropped_buffers_;
  s.unknown_activities = decoder_ ? decoder_->stats().unknown_kinds : 0;
  s.clean_exit = clean_exit;
  writer_.add(s);
}

void Tracer::writer_loop() {
  auto last_flush = std::chrono::steady_clock::now();
  bool stop = false;
  while (!stop) {
    pollfd pfd{wake_pipe_[0], POLLIN, 0};
    poll(&pfd, 1, kFlushPeriodMs / 2);
    bool signal_flush = false;
    char bytes[64];
    if (pfd.revents & POLLIN) {
      ssize_t n = read(wake_pipe_[0], bytes, sizeof(bytes));
      for (ssize_t i = 0; i < n; ++i) {
        if (bytes[i] == 'T') signal_flush = true;
        if (bytes[i] == 'S') stop = true;
      }
    }
    check_window_deadlines();
    auto now = std::chrono::steady_clock::now();
    if (!cupti_callable()) {
      // Detaching or detached: no CUPTI call races the detach or attaches CUPTI again.
    } else if (signal_flush) {
      cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    } else if (!stop && now - last_flush >= std::chrono::milliseconds(kFlushPeriodMs)) {
      // Completed buffers only: cheap, and keeps the file at most ~1 s behind.
      cuptiActivityFlushAll(0);
      last_flush = now;
    }
    process_queue();
    drain_gemms();
    write_stats(stop);
    writer_.flush();
    if (signal_flush) {
      char ack = 'A';
      (void)!write(ack_pipe_[1], &ack, 1);
    }
  }
  writer_.close();
  std::lock_guard<std::mutex> lock(done_mutex_);
  done_ = true;
  done_cv_.notify_all();
}

void Tracer::write_process_record() {
  capture::ProcessRecord p;
  p.pid = getpid();
  p.ppid = getppid();
  p.start_ns = realtime_ns();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  p.hostname = host;
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  for (char& c : args)
    if (c == '\0') c = ' ';
  while (!args.empty() && args.back() == ' ') args.pop_back();
  p.command_line = args;
  if (const char* r = std::getenv(run_protocol::kEnvRank.name)) p.rank = std::atoi(r);
  if (const char* w = std::getenv(run_protocol::kEnvWorldSize.name)) p.world_size = std::atoi(w);
  p.tool_version = "gpuscope " GPUSCOPE_VERSION;  // CMake's project version
  writer_.add(p);
}

// Signal handling only where the program left the default action (which would kill it without
// running atexit): flush through the writer thread, bounded in time, then die of the same signal
// so the exit status is what it would have been.
void handle_signal(int sig) { Tracer::get().on_signal(sig); }

void Tracer::on_signal(int sig) {
  int saved_errno = errno;
  if (enabled_ && !forked_child_ && wake_pipe_[1] >= 0) {
    char b = 'T';
    (void)!write(wake_pipe_[1], &b, 1);
    pollfd pfd{ack_pipe_[0], POLLIN, 0};
    poll(&pfd, 1, kSignalFlushTimeoutMs);
  }
  signal(sig, SIG_DFL);
  errno = saved_errno;
  raise(sig);
}

void Tracer::install_signal_handlers() {
  if (const char* v = std::getenv(run_protocol::kEnvHandleSignals.name); v && std::strcmp(v, "0") == 0) return;
  for (int sig : {SIGTERM, SIGINT}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = handle_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, nullptr);
  }
}

// Turns on the activity kinds recorded; false (tracing off) when kernels cannot be recorded.
bool Tracer::enable_kinds() {
  // Kernels are what everything else hangs on: without them tracing is off.
  if (!check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)",
             true))
    return false;
  kinds_on_.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  // The rest are best effort; a failure is noted once in the capture's stats via stderr only
  // when GPUSCOPE_VERBOSE is set.
  const bool verbose = std::getenv(run_protocol::kEnvVerbose.name) != nullptr;
  // GPUSCOPE_KINDS_OFF: comma-separated names of optional kinds not to record (e.g. "MEMORY2"), to
  // measure what each costs the traced program; the analysis then lacks what they would explain.
  const char* off_env = std::getenv(run_protocol::kEnvKindsOff.name);
  const std::string kinds_off = "," + std::string(off_env ? off_env : "") + ",";
  auto optional_kind = [&](CUpti_ActivityKind kind, const char* name) {
    if (kinds_off.find(std::string(",") + name + ",") != std::string::npos) return;
    CUptiResult rc = cuptiActivityEnable(kind);
    if (rc == CUPTI_SUCCESS) kinds_on_.push_back(kind);
    if (rc != CUPTI_SUCCESS && verbose) {
      const char* text = nullptr;
      cuptiGetResultString(rc, &text);
      std::fprintf(stderr, "gpuscope: cuptiActivityEnable(%s) failed: %s\n", name, text ? text : "?");
    }
  };
  optional_kind(CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY");
  optional_kind(CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET");
  optional_kind(CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME");
  // Runtime calls that only ask a question (the current device, the last error, an attribute,
  // whether a stream captures) issue no work and block on nothing, so they explain no idle
  // time; PyTorch makes about eight of them per kernel it launches (9,697 cudaGetDevice
  // records for 1,186 kernels in a tiny-MLP step loop on the H200), and each recorded call
  // costs the program time. They are not recorded unless GPUSCOPE_RUNTIME_API=all.
  if (const char* r = std::getenv(run_protocol::kEnvRuntimeApi.name); !r || std::strcmp(r, "all") != 0) {
    for (CUpti_CallbackId cbid : {CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v3020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v12000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetStreamPriorityRange_v5050,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaFuncGetAttributes_v3020,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaGetFuncBySymbol_v11000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_ptsz_v10000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_ptsz_v10010,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_v11030,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_ptsz_v11030,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v12030,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_ptsz_v12030,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetPriority_v5050,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetPriority_ptsz_v7000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetId_v12000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetId_ptsz_v12000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetDevice_v12080,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetDevice_ptsz_v12080,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaThreadExchangeStreamCaptureMode_v10010,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaOccupancyMaxActiveBlocksPerMultiprocessor_v6000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags_v7000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaOccupancyMaxActiveClusters_v11070,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaOccupancyMaxPotentialClusterSize_v11070,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaOccupancyAvailableDynamicSMemPerBlock_v10200,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPoint_v11030,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPoint_ptsz_v11030,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPointByVersion_v12050,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaGetDriverEntryPointByVersion_ptsz_v12050}) {
      cuptiActivityEnableRuntimeApi(cbid, 0);
    }
  }
  optional_kind(CUPTI_ACTIVITY_KIND_MARKER, "MARKER");
  // CUPTI's synchronisation records (which stream or event each wait was on) cost a launch-bound
  // step far more than anything else recorded: on an H100, an eager 8-layer MLP training step of
  // 1.51 ms untraced ran at 1.89 ms traced and 1.65 ms with this kind alone off (eager row of
  // the non-intrusion matrix, 4 interleaved rounds of 200 steps). The analysis reads waits from
  // the runtime calls that block (cudaStreamSynchronize, a blocking copy, .item()), so the kind
  // is off unless GPUSCOPE_KINDS_ON names it.
  const char* on_env = std::getenv(run_protocol::kEnvKindsOn.name);
  const std::string kinds_on = "," + std::string(on_env ? on_env : "") + ",";
  if (kinds_on.find(",SYNCHRONIZATION,") != std::string::npos)
    optional_kind(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION");
  optional_kind(CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2");
  optional_kind(CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE");
  // Driver API: every runtime call also makes driver calls, so recording them all roughly
  // doubles the API records. By default only the launch entry points (Triton and other
  // driver-API launchers); GPUSCOPE_DRIVER_API=all records every driver call.
  if (const char* d = std::getenv(run_protocol::kEnvDriverApi.name); d && std::strcmp(d, "all") == 0) {
    optional_kind(CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER");
  } else {
    for (CUpti_CallbackId cbid :
         {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
          CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz}) {
      const CUptiResult rc = cuptiActivityEnableDriverApi(cbid, 1);
      if (rc != CUPTI_SUCCESS && verbose) {
        const char* text = nullptr;
        cuptiGetResultString(rc, &text);
        std::fprintf(stderr, "gpuscope: cuptiActivityEnableDriverApi(%u) failed: %s\n", static_cast<unsigned>(cbid),
                     text ? text : "?");
      }
    }
  }

  return true;
}

// Opens a waiting window (from the program's thread or the writer thread).
bool Tracer::open_window() {
  std::lock_guard<std::mutex> lock(window_mutex_);
  if (window_ != kWaiting || !enabled_) return false;
  if (!enable_kinds()) return false;
  using SetRecordingFn = void (*)(int);
  if (auto set = reinterpret_cast<SetRecordingFn>(dlsym(RTLD_DEFAULT, "gpuscope_blas_set_recording"))) set(1);
  if (open_for_ns_ > 0) close_at_ns_ = realtime_ns() + open_for_ns_;
  window_ = kOpen;
  return true;
}

// Asks the writer thread to close an open window; returns at once.
bool Tracer::request_close() {
  int open = kOpen;
  if (!window_.compare_exchange_strong(open, kClosing)) return false;
  char b = 'W';
  if (wake_pipe_[1] >= 0) (void)!write(wake_pipe_[1], &b, 1);
  return true;
}

// Writer thread: everything CUPTI holds is decoded, then CUPTI is detached for good.
void Tracer::close_window() {
  std::lock_guard<std::mutex> lock(window_mutex_);
  using SetRecordingFn = void (*)(int);
  if (auto set = reinterpret_cast<SetRecordingFn>(dlsym(RTLD_DEFAULT, "gpuscope_blas_set_recording"))) set(0);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  process_queue();
  if (graph_launched_) {
    // The window replayed CUDA graphs. Detaching CUPTI then (activity off, cuptiFinalize) made
    // the program's next graph replay fail with "unspecified launch failure" on the H200
    // (examples/serve/decode.py --graph under `run --steps`, two runs of two, 2026-12-02,
    // both bounded), while whole-run tracing of the same program was fine. So CUPTI stays as it is:
    // it is given no more buffers (its records after the window are dropped), and the program
    // keeps paying the tracer's per-launch cost, which graph replays keep small.
    drain_gemms();
    enabled_ = false;
    window_ = kDone;
    if (std::getenv(run_protocol::kEnvVerbose.name))
      std::fprintf(stderr, "gpuscope: window closed; CUDA graphs were launched, so CUPTI stays attached\n");
    return;
  }
  for (CUpti_ActivityKind kind : kinds_on_) cuptiActivityDisable(kind);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
  kinds_on_.clear();
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  process_queue();
  drain_gemms();
  writer_.flush();  // The window is on disk before the detach, whatever the detach does.
  enabled_ = false;
  // CUPTI stays attached with every kind off (the file comment says why), unless
  // GPUSCOPE_DETACH=1: the detach then runs at the exit of the program's next CUDA runtime call
  // (on_api_exit), or not at all where the callback cannot be had (another CUPTI client holds it).
  if (const char* d = std::getenv(run_protocol::kEnvDetach.name); !d || std::strcmp(d, "1") != 0) {
    window_ = kDone;
    if (std::getenv(run_protocol::kEnvVerbose.name))
      std::fprintf(stderr, "gpuscope: window closed; CUPTI stays attached, every kind off\n");
    return;
  }
  window_ = kDetaching;
  if (!check(cuptiSubscribe(&detach_subscriber_, detach_callback, nullptr), "cuptiSubscribe", false)) {
    window_ = kDone;
    return;
  }
  detach_pending_ = true;  // Before the callbacks start: the very first runtime call detaches.
  if (!check(cuptiEnableDomain(1, detach_subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API), "cuptiEnableDomain(RUNTIME_API)",
             false)) {
    detach_pending_ = false;  // No callback comes.
    cuptiUnsubscribe(detach_subscriber_);
    window_ = kDone;
  }
}

// At the exit of a CUDA runtime call, on the program's thread, once a detach is asked for: the
// first such call detaches CUPTI for good (its subscriber first, as PyTorch's profiler does).
void Tracer::on_api_exit() {
  if (!detach_pending_.exchange(false)) return;
  cuptiUnsubscribe(detach_subscriber_);
  const CUptiResult rc = cuptiFinalize();
  window_ = kDone;
  if (std::getenv(run_protocol::kEnvVerbose.name))
    std::fprintf(stderr, "gpuscope: window closed; CUPTI detached at a CUDA runtime call's exit (%d)\n",
                 static_cast<int>(rc));
}

void Tracer::check_window_deadlines() {
  const int64_t now = realtime_ns();
  if (window_ == kWaiting && open_at_ns_ > 0 && now >= open_at_ns_) open_window();
  const int64_t close_at = close_at_ns_.load();
  if (window_ == kOpen && close_at > 0 && now >= close_at) {
    int open = kOpen;
    window_.compare_exchange_strong(open, kClosing);
  }
  if (window_ == kClosing) close_window();
}

int Tracer::initialize() {
  if (initialized_.exchange(true)) return 1;
  if (tracing_disabled()) return 1;

  std::string prefix = "gpuscope";
  if (const char* p = std::getenv(run_protocol::kEnvCapturePrefix.name); p && *p) prefix = p;
  capture::CaptureWriter::Options options;
  if (const char* c = std::getenv(run_protocol::kEnvCompress.name); c && std::strcmp(c, "0") == 0)
    options.compress = false;
  // A new file only (O_EXCL|O_NOFOLLOW, mode 0600): `<prefix>.<pid>.gpuscope`, or a numbered
  // name beside it when that exists (an exec'd image of this pid wrote it); never truncating or
  // following what is there.
  std::string error;
  if (!writer_.open_new_for_process(prefix, getpid(), options, &path_, &error)) {
    disable(error);
    return 1;
  }
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0 || pipe2(ack_pipe_, O_CLOEXEC) != 0) {
    disable("cannot create pipes");
    return 1;
  }
  write_process_record();
  writer_.flush();

  // Timestamps in host CLOCK_REALTIME, explicitly (CUPTI's Linux default; WSL differs).
  int64_t offset = 0;
  if (cuptiActivityRegisterTimestampCallback(cupti_timestamp) != CUPTI_SUCCESS) {
    uint64_t cupti_now = 0;
    if (cuptiGetTimestamp(&cupti_now) == CUPTI_SUCCESS) offset = realtime_ns() - static_cast<int64_t>(cupti_now);
  }
  decoder_ = std::make_unique<ActivityDecoder>(
      writer_,
      [](bool driver, uint32_t cbid) -> const char* {
        const char* name = nullptr;
        cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name);
        return name;
      },
      offset);

  enabled_ = true;
  if (!check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks",
             true))
    return 1;
  // Every buffer we hand over is zeroed already (on_buffer_requested); left at 0, CUPTI would
  // clear each one itself on the thread that asks, in the program's critical path. Best effort:
  // if the attribute is refused, CUPTI clears them as before.
  uint8_t zeroed = 1;
  size_t zeroed_size = sizeof zeroed;
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size, &zeroed);
  auto env_ms = [](const char* name) -> int64_t {
    const char* v = std::getenv(name);
    return v ? std::max<int64_t>(0, std::atoll(v)) : 0;
  };
  const char* deferred = std::getenv(run_protocol::kEnvTraceDeferred.name);
  const int64_t after_ms = env_ms(run_protocol::kEnvTraceAfterMs.name);
  open_for_ns_ = env_ms(run_protocol::kEnvTraceForMs.name) * 1000000;
  if ((deferred && std::strcmp(deferred, "1") == 0) || after_ms > 0) {
    window_ = kWaiting;
    if (after_ms > 0) open_at_ns_ = realtime_ns() + after_ms * 1000000;
    // Device records (name, SM count, clocks) come once, when the context is created: recorded
    // from the start, they cost nothing per launch.
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
  } else {
    if (!enable_kinds()) return 1;
    if (open_for_ns_ > 0) {
      window_ = kOpen;
      close_at_ns_ = realtime_ns() + open_for_ns_;
    }
  }

  pthread_atfork([] { Tracer::get().on_fork_prepare(); }, [] { Tracer::get().on_fork_parent(); },
                 [] { Tracer::get().on_fork_child(); });
  thread_ = std::thread([this] {
    // The writer thread must not take the program's signals.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    writer_loop();
  });
  std::atexit([] { Tracer::get().shutdown(); });
  // _exit skips atexit; libgpuscope_blas.so (preloaded, global) calls this hook from _exit.
  using SetHookFn = void (*)(void (*)());
  if (auto set_hook = reinterpret_cast<SetHookFn>(dlsym(RTLD_DEFAULT, "gpuscope_blas_set_exit_hook")))
    set_hook([] { Tracer::get().shutdown(); });
  install_signal_handlers();
  return 1;
}

void Tracer::shutdown() {
  if (forked_child_ || shutting_down_.exchange(true) || !thread_.joinable()) return;
  detach_pending_ = false;  // The process ends: no detach inside its exit.
  if (enabled_ && cupti_callable()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  char b = 'S';
  (void)!write(wake_pipe_[1], &b, 1);
  std::unique_lock<std::mutex> lock(done_mutex_);
  if (done_cv_.wait_for(lock, std::chrono::milliseconds(kExitTimeoutMs), [this] { return done_; })) {
    lock.unlock();
    thread_.join();
  } else {
    lock.unlock();
    thread_.detach();  // Never hang the program's exit on the tracer.
  }
  enabled_ = false;
}

}  // namespace
}  // namespace gpuscope::cupti

extern "C" {

// Called by the CUDA driver during cuInit. Returns 1 whatever happens: a tracer failure must
// not fail the program's CUDA initialisation.
__attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    return gpuscope::cupti::Tracer::get().initialize();
  } catch (...) {
    std::fprintf(stderr, "gpuscope: tracing disabled: unexpected error during initialisation\n");
    return 1;
  }
}

// Bounded tracing control for the Python bootstrap (ctypes): 1 opens a waiting window, 0 closes
// an open one (asynchronously). Returns 1 when it changed something, 0 otherwise.
__attribute__((visibility("default"))) int gpuscope_trace_control(int open) {
  try {
    auto& t = gpuscope::cupti::Tracer::get();
    return (open ? t.open_window() : t.request_close()) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

// NVTX injection entry point: hand NVTX to CUPTI (which records CUPTI_ACTIVITY_KIND_MARKER),
// using the libcupti already loaded as our dependency.
typedef int (*NvtxInitFn)(void*);
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(void* get_export_table) {
  // Tracing off: NVTX stays without a tool, each range or mark a no-op.
  if (gpuscope::cupti::tracing_disabled()) return 0;
  void* handle = dlopen("libcupti.so.13", RTLD_NOLOAD | RTLD_LAZY);
  if (!handle) handle = dlopen("libcupti.so", RTLD_NOLOAD | RTLD_LAZY);
  if (!handle) return 0;
  auto fn = reinterpret_cast<NvtxInitFn>(dlsym(handle, "InitializeInjectionNvtx2"));
  if (!fn) return 0;
  return fn(get_export_table);
}

}  // extern "C"
