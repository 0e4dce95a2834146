// Cost of the live sampler and the exporter with 8 fake GPUs (the fake NVML library, loaded
// through the real dlopen path). Benchmarks report numbers; results: docs/validation.md.
//
//   build/src/nvml/sampler_bench        (CMake: src/nvml/CMakeLists.txt, GPUSCOPE_BENCH)
//
// - BM_SamplePass: one sampler pass over 8 GPUs (NVML + GPM + processes + /proc identity),
//   plus the signals and the exposition text, as `gpuscope serve` does every interval.
//   GPM is read on every pass here (the fake ignores the 100 ms rule; see the note there).
// - BM_TenHertzFor10s: the same at a real 10 Hz for 10 s; counters: cpu_pct (of one core)
//   and rss_mib of this process.
// - BM_ScrapeLatency: GET /metrics against LiveExporter (8 GPUs, sampling at 10 Hz meanwhile);
//   counters p50_ms, p99_ms, max_ms over 2000 scrapes.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <httplib.h>

#include "core/signals.h"
#include "exporter/prometheus.h"
#include "exporter/server.h"
#include "nvml/sampler.h"

namespace gpuscope {
namespace {

constexpr int kGpus = 8;

// An 8-GPU fixture in the fake's format: busy GEMM GPUs with two processes each.
std::string write_fixture() {
  const std::string path = "/tmp/gpuscope_bench_8gpu.txt";
  std::ofstream f(path);
  f << "driver 580.159.04\n";
  for (int i = 0; i < kGpus; ++i) {
    f << "device " << i << " uuid=GPU-bench-" << i << " gpm=1 mig=0 name=NVIDIA H200\n";
  }
  for (int frame = 0; frame < 4; ++frame) {
    f << "frame\n";
    for (int i = 0; i < kGpus; ++i) {
      f << "s " << i << " gpu_util=" << 95 + frame << " mem_util=20 mem_used=17179869184"
        << " mem_total=150754820096 power_mw=650000 energy_mj=" << 1000000 + frame * 300
        << " sm_clock=1980 mem_clock=3201 temp=55 throttle=0 gpm2=96.5 gpm3=14.3 gpm5=93.7"
           " gpm7=93.7 gpm9=0 gpm6=0 gpm10=17 gpm11=0 gpm12=1.5 gpm13=0 gpm20=8 gpm21=16"
           " gpm60=0 gpm61=0\n";
      f << "p " << i << " pid=" << 1 << " used=8589934592 sm=90 mem=20\n";
      f << "p " << i << " pid=" << 100000 + i << " used=8589934592 sm=10 mem=2\n";
    }
  }
  return path;
}

std::unique_ptr<nvml::Sampler> open_sampler() {
  setenv("GPUSCOPE_FAKE_NVML_FIXTURE", write_fixture().c_str(), 1);
  auto api = nvml::NvmlApi::load(GPUSCOPE_FAKE_NVML_PATH);
  if (!api.ok()) return nullptr;
  auto sampler = nvml::Sampler::open(std::move(*api), nvml::SamplerOptions{});
  return sampler.ok() ? std::move(*sampler) : nullptr;
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

double rss_mib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  }
  return 0;
}

// One pass as `gpuscope serve` does it: sample, signals, render.
void serve_pass(nvml::Sampler& sampler, SignalTracker& tracker, nvml::LiveSnapshot& snap) {
  (void)sampler.sample(&snap);
  std::vector<Signal> signals = tracker.update(snap.devices, snap.processes);
  exporter::ExpositionInput in{&sampler.devices(), &snap, &signals, sampler.driver_version()};
  std::string text = exporter::render_prometheus(in, {});
  benchmark::DoNotOptimize(text);
}

void BM_SamplePass(benchmark::State& state) {
  auto sampler = open_sampler();
  if (!sampler) return state.SkipWithError("fake NVML did not load");
  SignalTracker tracker;
  nvml::LiveSnapshot snap;
  // GPM is only read >= 100 ms after the previous GPM sample; to include its cost on every
  // pass, wait that long untimed before each pass.
  for (auto _ : state) {
    state.PauseTiming();
    std::this_thread::sleep_for(std::chrono::milliseconds(101));
    state.ResumeTiming();
    serve_pass(*sampler, tracker, snap);
  }
  state.counters["gpus"] = kGpus;
  state.counters["gpm_read"] = snap.devices[0].sm_active_pct ? 1 : 0;
}
BENCHMARK(BM_SamplePass)->Iterations(50)->Unit(benchmark::kMicrosecond);

void BM_TenHertzFor10s(benchmark::State& state) {
  auto sampler = open_sampler();
  if (!sampler) return state.SkipWithError("fake NVML did not load");
  SignalTracker tracker;
  nvml::LiveSnapshot snap;
  for (auto _ : state) {
    const double cpu0 = cpu_seconds();
    auto next = std::chrono::steady_clock::now();
    const auto start = next;
    for (int i = 0; i < 100; ++i) {
      next += std::chrono::milliseconds(100);
      std::this_thread::sleep_until(next);
      serve_pass(*sampler, tracker, snap);
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.counters["cpu_pct"] = 100.0 * (cpu_seconds() - cpu0) / wall;
    state.counters["rss_mib"] = rss_mib();
  }
}
BENCHMARK(BM_TenHertzFor10s)->Iterations(1)->Unit(benchmark::kSecond);

void BM_ScrapeLatency(benchmark::State& state) {
  auto sampler = open_sampler();
  if (!sampler) return state.SkipWithError("fake NVML did not load");
  exporter::ServeOptions o;
  o.listen = {"127.0.0.1", 0};
  o.interval_ns = 100'000'000;
  exporter::LiveExporter server(std::move(sampler), o);
  if (!server.start().ok()) return state.SkipWithError("cannot start the exporter");
  httplib::Client client("127.0.0.1", server.port());
  client.set_keep_alive(false);  // Prometheus reuses connections; a fresh one is the worse case.
  std::vector<double> ms;
  size_t bytes = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto res = client.Get("/metrics");
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!res || res->status != 200) return state.SkipWithError("scrape failed");
    bytes = res->body.size();
  }
  std::sort(ms.begin(), ms.end());
  state.counters["p50_ms"] = ms[ms.size() / 2];
  state.counters["p99_ms"] = ms[ms.size() * 99 / 100];
  state.counters["max_ms"] = ms.back();
  state.counters["bytes"] = static_cast<double>(bytes);
  server.stop();
}
BENCHMARK(BM_ScrapeLatency)->Iterations(2000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpuscope

BENCHMARK_MAIN();
