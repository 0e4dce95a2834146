// GPT-2 training loop in CUDA C++: the seed experiment's knobs as switches.
//
//   train_gpt [--precision fp32|bf16] [--kernels unfused|fused] [--optimizer per-tensor|fused]
//             [--input sync|async] [--graph off|on] [--batch 16] [--seq 1024] [--layers 12] [--heads 12]
//             [--channels 768] [--vocab 50257] [--steps 20] [--warmup 3] [--prep-ms 5]
//             [--lr 3e-4] [--weight-decay 0] [--peak-tflops 989.4] [--seed 1] [--breakdown N]
//   train_gpt --check [--precision ...] [--kernels ...] [--optimizer ...] [--graph ...]
//
// Training prints one line per step on stderr and one JSON line on stdout at the end with
// tokens/s and MFU. MFU uses 6N + 12·L·H·Q·T training FLOPs per token (PaLM appendix B; N without
// position embeddings) over --peak-tflops (default 989.4: H100/H200 SXM bf16 dense), for every
// precision, as gpuscope does.
//
// --input sync: the main thread prepares each batch (synthetic corpus + --prep-ms of host work
// standing in for decoding/augmentation), copies it with synchronous cudaMemcpy from pageable
// memory, and reads the loss back after every step (a per-step sync, like loss.item()).
// --input async: a producer thread prepares batches into pinned buffers; copies go on a second
// stream, double-buffered on the device, ordered with events; losses are read once at the end.
//
// --graph on: after the warm-up steps (which tune GEMMs and attention variants), the forward and
// backward passes are captured once into a CUDA graph and each step replays it: one launch
// instead of ~300, and the GPU runs the kernels back to back without per-launch gaps. The
// optimizer step (its bias corrections change every step) and the input copies stay outside.
//
// --breakdown N: after the timed steps, N more steps with CUDA events around kernel groups;
// prints GPU ms per step per group (matmul, attention, layernorm, ...) and GEMM TFLOP/s.
//
// --check: a tiny configuration; gradients of one forward/backward against the double-precision
// CPU reference (gpt_ref.h), then one optimizer step against AdamW computed on the CPU from the
// GPU's own gradients. Exit 0 when relative errors (‖gpu − ref‖ / ‖ref‖ per tensor) are within
// 1e-4 (fp32) or 2e-2 (bf16), 1 otherwise.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/args.h"
#include "common/cuda_util.h"
#include "gpt/gpt_config.h"
#include "gpt/gpt_ref.h"
#include "gpt/model.cuh"

namespace gpuscope::gpt {
namespace {

using workloads::Args;
using workloads::JsonLine;
using workloads::NowS;
using workloads::NvtxRange;

struct Options {
  std::string precision, kernels, optimizer, input, graph;
  GptConfig config;
  int batch = 16, seq = 1024;
  long steps = 20, warmup = 3, breakdown = 0;
  double prep_ms = 5, peak_tflops = 989.4;
  uint64_t seed = 1;
  ModelOptions model;
  bool check = false;
};

// Batches for --input async: a producer thread fills pinned host slots; the consumer copies a
// slot to one of two device buffers on the copy stream. A slot is refilled only after the copy
// from it has completed (its event), a device buffer is overwritten only after the step that
// read it has finished (compute-stream event).
class AsyncInput {
 public:
  AsyncInput(SyntheticCorpus& corpus, int B, int T, double prep_ms, cudaStream_t copy_stream)
      : corpus_(corpus), B_(B), T_(T), prep_ms_(prep_ms), copy_(copy_stream) {
    const size_t n = size_t(B) * T;
    for (auto& s : slots_) {
      CUDA_CHECK(cudaMallocHost(&s.inputs, n * sizeof(int)));
      CUDA_CHECK(cudaMallocHost(&s.targets, n * sizeof(int)));
      CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
      s.scratch.resize(n);
    }
    for (auto& d : dev_) {
      CUDA_CHECK(cudaMalloc(&d.inputs, n * sizeof(int)));
      CUDA_CHECK(cudaMalloc(&d.targets, n * sizeof(int)));
      CUDA_CHECK(cudaEventCreateWithFlags(&d.ready, cudaEventDisableTiming));
      CUDA_CHECK(cudaEventCreateWithFlags(&d.consumed, cudaEventDisableTiming));
      CUDA_CHECK(cudaEventRecord(d.consumed, copy_));
    }
    producer_ = std::thread([this] { Produce(); });
  }
  ~AsyncInput() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    producer_.join();
    for (auto& s : slots_) {
      cudaFreeHost(s.inputs);
      cudaFreeHost(s.targets);
      cudaEventDestroy(s.copied);
    }
    for (auto& d : dev_) {
      cudaFree(d.inputs);
      cudaFree(d.targets);
      cudaEventDestroy(d.ready);
      cudaEventDestroy(d.consumed);
    }
  }

  // Issues the copy of batch k into device buffer k % 2 (blocks only if the producer is behind).
  void Prefetch(long k) {
    Slot& s = slots_[k % kSlots];
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return s.ready; });
    }
    Dev& d = dev_[k % 2];
    const size_t bytes = size_t(B_) * T_ * sizeof(int);
    CUDA_CHECK(cudaStreamWaitEvent(copy_, d.consumed, 0));
    CUDA_CHECK(cudaMemcpyAsync(d.inputs, s.inputs, bytes, cudaMemcpyHostToDevice, copy_));
    CUDA_CHECK(cudaMemcpyAsync(d.targets, s.targets, bytes, cudaMemcpyHostToDevice, copy_));
    CUDA_CHECK(cudaEventRecord(s.copied, copy_));
    CUDA_CHECK(cudaEventRecord(d.ready, copy_));
    {
      std::lock_guard<std::mutex> lk(mu_);
      s.ready = false;
      s.copy_issued = true;
    }
    cv_.notify_all();
  }
  // Device buffers of batch k; the compute stream waits for its copy.
  void Acquire(long k, cudaStream_t compute, int** inputs, int** targets) {
    Dev& d = dev_[k % 2];
    CUDA_CHECK(cudaStreamWaitEvent(compute, d.ready, 0));
    *inputs = d.inputs;
    *targets = d.targets;
  }
  // The step that used batch k has been issued on `compute`; its buffer is free after it.
  void Release(long k, cudaStream_t compute) { CUDA_CHECK(cudaEventRecord(dev_[k % 2].consumed, compute)); }

 private:
  static constexpr int kSlots = 3;
  struct Slot {
    int* inputs = nullptr;
    int* targets = nullptr;
    std::vector<unsigned> scratch;
    cudaEvent_t copied;
    bool ready = false, copy_issued = false;
  };
  struct Dev {
    int* inputs = nullptr;
    int* targets = nullptr;
    cudaEvent_t ready, consumed;
  };

  void Produce() {
    for (long k = 0;; ++k) {
      Slot& s = slots_[k % kSlots];
      bool wait_copy = false;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || !s.ready; });
        if (stop_) return;
        wait_copy = s.copy_issued;
      }
      if (wait_copy) CUDA_CHECK(cudaEventSynchronize(s.copied));
      {
        NvtxRange r("input");
        corpus_.NextBatch(B_, T_, s.inputs, s.targets);
        workloads::HostBusyWork(prep_ms_, s.scratch.data(), s.scratch.size());
      }
      {
        std::lock_guard<std::mutex> lk(mu_);
        s.ready = true;
      }
      cv_.notify_all();
    }
  }

  SyntheticCorpus& corpus_;
  int B_, T_;
  double prep_ms_;
  cudaStream_t copy_;
  Slot slots_[kSlots];
  Dev dev_[2];
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread producer_;
};

// Forward and backward of `model` on stream s (writing the loss to *loss), captured once into an
// instantiated CUDA graph. Thread-local capture: other threads (the input producer) keep making
// CUDA calls meanwhile. The kernels must have been tuned already (tuning allocates and times).
template <class T>
cudaGraphExec_t CaptureStep(GptModel<T>& model, float* loss, cudaStream_t s) {
  cudaGraph_t g;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  model.Forward(loss, s);
  model.Backward(s);
  CUDA_CHECK(cudaStreamEndCapture(s, &g));
  CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
  CUDA_CHECK(cudaGraphDestroy(g));
  return exec;
}

template <class T>
int Train(const Options& o) {
  const GptConfig& c = o.config;
  const int B = o.batch, Tn = o.seq;
  const std::vector<float> init = InitParams(c, o.seed);
  GptModel<T> model(c, B, Tn, o.model, init);
  const long total_steps = o.warmup + o.steps;
  float* losses_dev;
  CUDA_CHECK(cudaMalloc(&losses_dev, total_steps * sizeof(float)));
  cudaStream_t compute, copy;
  CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
  SyntheticCorpus corpus(c.vocab_size, o.seed + 100);
  const bool async = o.input == "async";
  const bool graph = o.graph == "on";
  float* loss_slot = nullptr;  // --graph on: the captured forward writes the loss here
  cudaGraphExec_t step_graph = nullptr;
  std::vector<float> losses(total_steps, NAN);
  const double flops_per_token = TrainFlopsPerToken(c, Tn);

  std::fprintf(stderr,
               "train_gpt: L=%d NH=%d C=%d V=%d (padded %d) B=%d T=%d | precision %s, kernels %s, optimizer %s, "
               "input %s, graph %s | %.1f M params, %.2f GFLOP/token (6N+12LHQT), device memory %.1f GiB\n",
               c.num_layers, c.num_heads, c.channels, c.vocab_size, c.padded_vocab_size, B, Tn, o.precision.c_str(),
               o.kernels.c_str(), o.optimizer.c_str(), o.input.c_str(), o.graph.c_str(), ParamLayout(c).total / 1e6,
               flops_per_token / 1e9, model.bytes() / double(1ull << 30));

  std::vector<int> host_in(size_t(B) * Tn), host_tg(size_t(B) * Tn);
  std::vector<unsigned> scratch(size_t(B) * Tn);
  std::unique_ptr<AsyncInput> pipe;
  if (async) {
    pipe = std::make_unique<AsyncInput>(corpus, B, Tn, o.prep_ms, copy);
    pipe->Prefetch(0);
  }
  double t0 = 0;
  for (long step = 0; step < total_steps; ++step) {
    if (step == o.warmup) {
      CUDA_CHECK(cudaStreamSynchronize(compute));
      if (graph) {
        CUDA_CHECK(cudaMalloc(&loss_slot, sizeof(float)));
        step_graph = CaptureStep(model, loss_slot, compute);
        CUDA_CHECK(cudaGraphUpload(step_graph, compute));
        CUDA_CHECK(cudaStreamSynchronize(compute));
      }
      t0 = NowS();
    }
    NvtxRange range(step < o.warmup ? "warmup" : "step");  // warm-up steps are not "step"s
    if (async) {
      int *in, *tg;
      pipe->Acquire(step, compute, &in, &tg);
      if (step + 1 < total_steps) pipe->Prefetch(step + 1);
      // The model reads its own input buffers; point them at this step's batch by copying
      // device-to-device (64 KiB each, on the compute stream, after the batch arrived).
      const size_t bytes = size_t(B) * Tn * sizeof(int);
      CUDA_CHECK(cudaMemcpyAsync(model.inputs(), in, bytes, cudaMemcpyDeviceToDevice, compute));
      CUDA_CHECK(cudaMemcpyAsync(model.targets(), tg, bytes, cudaMemcpyDeviceToDevice, compute));
      pipe->Release(step, compute);
    } else {
      {
        NvtxRange r("input");
        corpus.NextBatch(B, Tn, host_in.data(), host_tg.data());
        workloads::HostBusyWork(o.prep_ms, scratch.data(), scratch.size());
      }
      CUDA_CHECK(cudaMemcpy(model.inputs(), host_in.data(), host_in.size() * sizeof(int), cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemcpy(model.targets(), host_tg.data(), host_tg.size() * sizeof(int), cudaMemcpyHostToDevice));
    }
    if (step_graph) {
      CUDA_CHECK(cudaGraphLaunch(step_graph, compute));
      CUDA_CHECK(cudaMemcpyAsync(losses_dev + step, loss_slot, sizeof(float), cudaMemcpyDeviceToDevice, compute));
    } else {
      model.Forward(losses_dev + step, compute);
      model.Backward(compute);
    }
    model.Update(int(step + 1), compute);
    if (!async) {
      // loss.item(): a synchronous read every step.
      CUDA_CHECK(cudaMemcpyAsync(&losses[step], losses_dev + step, sizeof(float), cudaMemcpyDeviceToHost, compute));
      CUDA_CHECK(cudaStreamSynchronize(compute));
      std::fprintf(stderr, "step %ld loss %.4f\n", step, losses[step]);
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(compute));
  const double elapsed = NowS() - t0;
  CUDA_CHECK(cudaMemcpy(losses.data(), losses_dev, total_steps * sizeof(float), cudaMemcpyDeviceToHost));
  if (async)
    for (long s = 0; s < total_steps; ++s) std::fprintf(stderr, "step %ld loss %.4f\n", s, losses[s]);
  pipe.reset();

  if (step_graph) CUDA_CHECK(cudaGraphExecDestroy(step_graph));
  if (loss_slot) CUDA_CHECK(cudaFree(loss_slot));
  if (o.breakdown > 0) PrintBreakdown(model, o, compute, elapsed / o.steps);

  const double tokens_per_s = double(o.steps) * B * Tn / elapsed;
  const double mfu = tokens_per_s * flops_per_token / (o.peak_tflops * 1e12);
  std::fprintf(stderr, "%.1f ms/step, %.0f tokens/s, MFU %.1f%% (6N+12LHQT FLOPs/token over %.1f TFLOP/s peak)\n",
               1e3 * elapsed / o.steps, tokens_per_s, 100 * mfu, o.peak_tflops);
  const AttentionShape att_shape{B, Tn, c.num_heads, c.head_size()};
  JsonLine j;
  j.Add("workload", "train_gpt")
      .Add("precision", o.precision)
      .Add("kernels", o.kernels)
      .Add("flash_attention", model.flash())
      .Add("flash_bwd", model.flash() ? FlashBackwardPathName(FlashBackwardPathFor(att_shape)) : "none")
      .Add("flash_fwd", model.flash() ? FlashForwardVariantName(FlashForwardVariantFor(att_shape)) : "none")
      .Add("optimizer", o.optimizer)
      .Add("input", o.input)
      .Add("graph", o.graph)
      .Add("batch", B)
      .Add("seq", Tn)
      .Add("layers", c.num_layers)
      .Add("channels", c.channels)
      .Add("steps", o.steps)
      .Add("elapsed_s", elapsed)
      .Add("step_ms", 1e3 * elapsed / o.steps)
      .Add("tokens_per_s", tokens_per_s)
      .Add("flops_per_token", flops_per_token)
      .Add("peak_tflops", o.peak_tflops)
      .Add("mfu_pct", 100 * mfu)
      .Add("mfu_convention", "6N+12LHQT")
      .Add("loss_first", double(losses.front()))
      .Add("loss_last", double(losses.back()));
  j.Print();
  cudaFree(losses_dev);
  cudaStreamDestroy(compute);
  cudaStreamDestroy(copy);
  return std::isfinite(losses.back()) ? 0 : 1;
}

// Runs o.breakdown more steps (same batch, no input pipeline) with a section timer attached and
// prints GPU milliseconds per step per kernel group, with achieved TFLOP/s for the GEMM groups.
template <class T>
void PrintBreakdown(GptModel<T>& model, const Options& o, cudaStream_t s, double step_s) {
  const GptConfig& c = o.config;
  SectionTimer timer;
  float* loss;
  CUDA_CHECK(cudaMalloc(&loss, sizeof(float)));
  model.set_timer(&timer);
  const double t0 = NowS();
  for (long i = 0; i < o.breakdown; ++i) {
    model.Forward(loss, s);
    model.Backward(s);
    model.Update(int(o.warmup + o.steps + i + 1), s);
  }
  CUDA_CHECK(cudaStreamSynchronize(s));
  const double wall_ms = 1e3 * (NowS() - t0) / o.breakdown;
  model.set_timer(nullptr);
  cudaFree(loss);
  const double tokens = double(o.batch) * o.seq;
  // GEMM FLOPs per step from shapes: linear layers (incl. the LM head) 2·params·tokens forward,
  // twice that backward; attention 2 GEMMs forward, 4 backward, each 2·B·NH·T²·HS: full T² for
  // the materialised path (computed), half of it for flash attention (it skips masked tiles;
  // its backward recomputes QKᵀ twice more, not counted).
  const double linear_params =
      double(c.num_layers) * 12.0 * c.channels * c.channels + double(c.padded_vocab_size) * c.channels;
  const double att_gemm =
      (model.flash() ? 0.5 : 1.0) * 2.0 * o.batch * c.num_heads * double(o.seq) * o.seq * c.head_size() * c.num_layers;
  const std::map<std::string, double> flops = {{"matmul_fwd", 2 * linear_params * tokens},
                                               {"matmul_bwd", 4 * linear_params * tokens},
                                               {"attention_fwd", 2 * att_gemm},
                                               {"attention_bwd", 4 * att_gemm}};
  // Minimum DRAM bytes per step of the memory-bound groups (each tensor read or written once,
  // fused-kernel view): a lower bound, so "at roofline" below is the fastest the group could be.
  const double S = sizeof(T), BTC = tokens * c.channels, L = c.num_layers, N = double(ParamLayout(c).total);
  const std::map<std::string, double> bytes = {
      {"gelu", 20 * BTC * S * L},                            // fwd r+w 4BTC; bwd r 8BTC, w 4BTC
      {"layernorm_residual", 16 * BTC * S * L},              // 2 LNs/layer: fwd 4BTC, bwd 4BTC each
      {"bias_grad", 9 * BTC * S * L},                        // read each linear's dout once
      {"classifier", 2 * tokens * c.padded_vocab_size * S},  // logits in, dlogits out
      {"optimizer", N * (28 + (S == 2 ? 2 : 0))},            // p,g,m,v in; p,m,v (+bf16 copy) out
      {"zero_grad", 4 * N + BTC * S},
      {"encoder", 3 * BTC * S}};
  // Ceilings measured on the H200 (../shared/GPU.md): bf16 dense GEMM ~790 TFLOP/s (8192³); fp32
  // CUDA-core peak 67 TFLOP/s (spec); device copy ~4.3 TB/s.
  const double flop_ceiling = (S == 2 ? 790e12 : 67e12), byte_ceiling = 4.3e12;
  double total = 0, total_roof = 0;
  const auto ms = timer.Collect();
  std::fprintf(stderr, "breakdown (%ld steps, GPU ms per step; timed step %.1f ms, breakdown wall %.1f ms):\n",
               o.breakdown, 1e3 * step_s, wall_ms);
  std::fprintf(stderr, "  %-20s %8s %9s %9s %11s %9s\n", "group", "ms", "TFLOP/s", "GB/s", "roofline ms", "excess ms");
  JsonLine j;
  j.Add("workload", "train_gpt_breakdown")
      .Add("precision", o.precision)
      .Add("kernels", o.kernels)
      .Add("optimizer", o.optimizer)
      .Add("step_ms", 1e3 * step_s)
      .Add("breakdown_wall_ms", wall_ms);
  for (const auto& [name, v] : ms) {
    const double per = v / o.breakdown;
    total += per;
    auto f = flops.find(name);
    auto b = bytes.find(name);
    double roof = 0;
    char tf_s[16] = "-", gb_s[16] = "-";
    if (f != flops.end()) {
      const double tf = f->second / (per * 1e-3) / 1e12;
      std::snprintf(tf_s, sizeof tf_s, "%.1f", tf);
      j.Add(name + "_tflops", tf);
      roof = f->second / flop_ceiling * 1e3;
    }
    if (b != bytes.end()) {
      const double gbs = b->second / (per * 1e-3) / 1e9;
      std::snprintf(gb_s, sizeof gb_s, "%.0f", gbs);
      j.Add(name + "_gbps", gbs);
      roof = std::max(roof, b->second / byte_ceiling * 1e3);
    }
    total_roof += roof;
    std::fprintf(stderr, "  %-20s %8.2f %9s %9s %11.2f %9.2f\n", name.c_str(), per, tf_s, gb_s, roof, per - roof);
    j.Add(name + "_ms", per);
    j.Add(name + "_roofline_ms", roof);
  }
  std::fprintf(stderr, "  %-20s %8.2f %9s %9s %11.2f %9.2f\n", "sum", total, "", "", total_roof, total - total_roof);
  j.Add("sum_ms", total).Add("roofline_sum_ms", total_roof);
  j.Print();
}

double RelErr(const float* gpu, const double* ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (gpu[i] - ref[i]) * (gpu[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

template <class T>
int Check(const Options& o) {
  constexpr bool kBf16 = !std::is_same_v<T, float>;
  const double tol = kBf16 ? 2e-2 : 1e-4;
  GptConfig c;
  c.vocab_size = 100;
  c.padded_vocab_size = 128;
  c.max_seq_len = 128;
  c.num_layers = 2;
  c.num_heads = 2;  // head size 64 and T = 128: the shapes flash attention takes (fused bf16)
  c.channels = 128;
  const int B = 2, Tn = 128;
  std::vector<float> init = InitParams(c, o.seed);
  // Larger than GPT-2's init spread so that every path carries gradient (padding rows stay 0).
  {
    Rng rng(o.seed + 7);
    ParamLayout lay(c);
    for (int t = 0; t < kNumParamTensors; ++t)
      for (size_t i = 0; i < lay.size[t]; ++i) {
        if (t == kWte && i >= size_t(c.vocab_size) * c.channels) continue;
        init[lay.offset[t] + i] += float(0.05 * rng.Normal());
      }
  }
  GptModel<T> model(c, B, Tn, o.model, init);
  std::vector<int> in(B * Tn), tg(B * Tn);
  SyntheticCorpus(c.vocab_size, o.seed + 3).NextBatch(B, Tn, in.data(), tg.data());
  CUDA_CHECK(cudaMemcpy(model.inputs(), in.data(), in.size() * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(model.targets(), tg.data(), tg.size() * sizeof(int), cudaMemcpyHostToDevice));
  float* loss_dev;
  CUDA_CHECK(cudaMalloc(&loss_dev, sizeof(float)));
  model.Forward(loss_dev, 0);
  model.Backward(0);
  CUDA_CHECK(cudaDeviceSynchronize());
  if (o.graph == "on") {  // again from a captured graph (the pass above tuned the kernels)
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMemset(loss_dev, 0, sizeof(float)));
    const cudaGraphExec_t exec = CaptureStep(model, loss_dev, s);
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaStreamDestroy(s));
  }
  float loss_gpu = 0;
  CUDA_CHECK(cudaMemcpy(&loss_gpu, loss_dev, sizeof(float), cudaMemcpyDeviceToHost));
  const ParamLayout lay(c);
  std::vector<float> grads(lay.total), params_before(lay.total), params_after(lay.total);
  CUDA_CHECK(cudaMemcpy(grads.data(), model.grads(), lay.total * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(params_before.data(), model.params(), lay.total * sizeof(float), cudaMemcpyDeviceToHost));

  // The reference computes with the weights the GPU computes with: in bf16 runs, the bf16
  // rounding of the master weights (so the check measures the kernels, not the weight cast).
  std::vector<float> ref_params = init;
  if (kBf16)
    for (float& p : ref_params) p = __bfloat162float(__float2bfloat16(p));
  ref::GptRef ref(c, ref_params);
  const double loss_ref = ref.Forward(in.data(), tg.data(), B, Tn);
  ref.Backward();

  bool ok = true;
  double worst = 0;
  const double loss_err = std::abs(loss_gpu - loss_ref) / std::abs(loss_ref);
  ok &= loss_err <= tol;
  std::printf("check precision=%s kernels=%s optimizer=%s graph=%s: loss gpu %.6f ref %.6f rel err %.2e\n",
              o.precision.c_str(), o.kernels.c_str(), o.optimizer.c_str(), o.graph.c_str(), loss_gpu, loss_ref,
              loss_err);
  for (int t = 0; t < kNumParamTensors; ++t) {
    const double e = RelErr(grads.data() + lay.offset[t], ref.grads().data() + lay.offset[t], lay.size[t]);
    worst = std::max(worst, e);
    ok &= e <= tol;
    std::printf("  grad %-9s rel err %.2e%s\n", ParamTensorName(t), e, e <= tol ? "" : "  FAIL");
  }

  // One optimizer step against AdamW in double on the CPU from the GPU's own gradients.
  model.Update(1, 0);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(params_after.data(), model.params(), lay.total * sizeof(float), cudaMemcpyDeviceToHost));
  const ModelOptions& h = o.model;
  double num = 0, den = 0;
  for (size_t i = 0; i < lay.total; ++i) {
    const double g = grads[i], m = (1 - h.beta1) * g, v = (1 - h.beta2) * g * g;
    const double mhat = m / (1 - h.beta1), vhat = v / (1 - h.beta2);
    const double p0 = params_before[i];
    const double delta_ref = -h.lr * (mhat / (std::sqrt(vhat) + h.eps) + h.weight_decay * p0);
    const double delta_gpu = double(params_after[i]) - p0;
    num += (delta_gpu - delta_ref) * (delta_gpu - delta_ref);
    den += delta_ref * delta_ref;
  }
  // The update is ~lr per element, computed in fp32 against p ~ 0.05: fp32 rounding of p bounds
  // the achievable relative error of the delta at about 1e-3.
  const double opt_err = std::sqrt(num / std::max(den, 1e-300));
  const double opt_tol = 1e-2;
  ok &= opt_err <= opt_tol;
  std::printf("  adamw step rel err %.2e (tolerance %.0e)%s\n", opt_err, opt_tol, opt_err <= opt_tol ? "" : "  FAIL");
  JsonLine j;
  j.Add("workload", "train_gpt_check")
      .Add("flash_attention", model.flash())
      .Add("precision", o.precision)
      .Add("kernels", o.kernels)
      .Add("optimizer", o.optimizer)
      .Add("graph", o.graph)
      .Add("loss_rel_err", loss_err)
      .Add("worst_grad_rel_err", worst)
      .Add("adamw_rel_err", opt_err)
      .Add("tolerance", tol)
      .Add("pass", ok);
  j.Print();
  cudaFree(loss_dev);
  return ok ? 0 : 1;
}

constexpr const char* kUsage =
    R"(usage: train_gpt [switches] [shape] [run]   GPT-2 training in CUDA C++ (GPT-2 124M by default)
       train_gpt --check [switches]              gradients and one AdamW step against a CPU reference

The seed experiment's switches (first value: the default, all off):
  --precision fp32|bf16        true fp32 (no TF32), or bf16 with fp32 accumulation and master weights
  --kernels unfused|fused      separate bias/GELU/residual/layernorm/softmax kernels, or fused ones and
                               flash attention (bf16, head size 64)
  --optimizer per-tensor|fused AdamW as ~4 kernels per parameter tensor, or one kernel
  --input sync|async           host-prepared batches, pageable sync copies and a loss read every step,
                               or a producer thread, pinned double-buffered copies on a second stream
  --graph off|on               replay forward+backward from a CUDA graph (after --warmup steps)
Shape:  --batch 16 --seq 1024 --layers 12 --heads 12 --channels 768 --vocab 50257
Run:    --steps 20 --warmup 3 --prep-ms 5 (host work per batch) --lr 3e-4 --weight-decay 0 --seed 1
        --peak-tflops 989.4 (MFU denominator)  --breakdown N (N more steps timed per kernel group)

All on: train_gpt --precision bf16 --kernels fused --optimizer fused --input async --graph on
Output: a line per step on stderr; one JSON line on stdout with tokens/s and MFU
(6N + 12·L·H·Q·T FLOPs per token, as gpuscope). --check exits 1 when a tolerance is exceeded.
)";

}  // namespace
}  // namespace gpuscope::gpt

int main(int argc, char** argv) {
  using namespace gpuscope::gpt;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  gpuscope::workloads::Args args(argc, argv, 1);
  Options o;
  o.precision = args.Choice("precision", {"fp32", "bf16"});
  o.kernels = args.Choice("kernels", {"unfused", "fused"});
  o.optimizer = args.Choice("optimizer", {"per-tensor", "fused"});
  o.input = args.Choice("input", {"sync", "async"});
  o.graph = args.Choice("graph", {"off", "on"});
  o.batch = int(args.Int("batch", 16));
  o.seq = int(args.Int("seq", 1024));
  o.config.num_layers = int(args.Int("layers", 12));
  o.config.num_heads = int(args.Int("heads", 12));
  o.config.channels = int(args.Int("channels", 768));
  o.config.vocab_size = int(args.Int("vocab", 50257));
  o.config.padded_vocab_size = (o.config.vocab_size + 127) / 128 * 128;
  o.config.max_seq_len = std::max(1024, o.seq);
  o.steps = args.Int("steps", 20);
  o.warmup = args.Int("warmup", 3);
  o.breakdown = args.Int("breakdown", 0);
  o.prep_ms = args.Real("prep-ms", 5);
  o.peak_tflops = args.Real("peak-tflops", 989.4);
  o.seed = uint64_t(args.Int("seed", 1));
  o.model.lr = float(args.Real("lr", 3e-4));
  o.model.weight_decay = float(args.Real("weight-decay", 0.0));
  o.model.fused_kernels = o.kernels == "fused";
  o.model.fused_optimizer = o.optimizer == "fused";
  o.check = args.Flag("check");
  args.RejectUnknown();
  const GptConfig& c = o.config;
  if (c.channels % 128 != 0 || c.channels % c.num_heads != 0 || (c.channels / c.num_heads) % 8 != 0)
    Args::Usage("--channels must be a multiple of 128 and of --heads, with a head size that is a multiple of 8");
  if (o.batch < 1 || o.seq < 8 || o.seq % 8 != 0 || o.steps < 1 || o.warmup < 0 || c.num_layers < 1)
    Args::Usage("--batch >= 1, --seq a multiple of 8, --steps >= 1, --layers >= 1");
  if (o.graph == "on" && o.warmup < 1 && !o.check)
    Args::Usage("--graph on needs --warmup >= 1 (warm-up steps tune the kernels before the capture)");
  if (o.check) return o.precision == "bf16" ? Check<__nv_bfloat16>(o) : Check<float>(o);
  return o.precision == "bf16" ? Train<__nv_bfloat16>(o) : Train<float>(o);
}
