// The live loop over the fake NVML: frames, signals, the command-line policy, pacing, stop.
#include "nvml/live_loop.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "nvml/fake_nvml_testing.h"

namespace gpuscope::nvml {
namespace {

std::unique_ptr<Sampler> open_fake(const char* fixture) {
  testing::use_fixture(testing::testdata(fixture));
  auto api = NvmlApi::load(GPUSCOPE_FAKE_NVML_PATH);
  EXPECT_TRUE(api.ok());
  SamplerOptions so;
  so.proc_root = testing::testdata("proc");
  auto s = Sampler::open(std::move(*api), so);
  EXPECT_TRUE(s.ok());
  return std::move(*s);
}

LiveLoopOptions fast(CommandLine policy) {
  LiveLoopOptions o;
  o.interval_ns = 100'000'000;
  o.first_wait_ns = 100'000'000;
  o.thresholds.idle_after_ns = 0;
  o.thresholds.signal_after_ns = 0;
  o.command_line = policy;
  o.proc_root = testing::testdata("proc");
  return o;
}

const ProcessSample* find(const LiveFrame& f, uint32_t pid) {
  for (const ProcessSample& p : f.snapshot->processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

TEST(LiveLoop, ExecutableNamesByDefault) {
  auto sampler = open_fake("synthetic_hostile.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(110));
  LiveLoop loop(*sampler, fast(CommandLine::kExecutable));
  const LiveFrame& f = loop.step();
  ASSERT_TRUE(f.status.ok());
  ASSERT_TRUE(find(f, 4242));
  EXPECT_EQ(find(f, 4242)->command, "python3");
  ASSERT_TRUE(find(f, 4444));
  EXPECT_EQ(find(f, 4444)->command,
            "tr\xef\xbf\xbd"
            "ain\x1b[2J");
  EXPECT_EQ(find(f, 4343)->command, "notebook");
  // The idle GPU 1 with 4 GiB held signals at once with these thresholds.
  ASSERT_EQ(f.signals->size(), 1u);
  EXPECT_EQ((*f.signals)[0].kind, SignalKind::kIdleHoldingMemory);
}

TEST(LiveLoop, ArgumentsOptInAreRedacted) {
  auto sampler = open_fake("synthetic_hostile.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(110));
  LiveLoop loop(*sampler, fast(CommandLine::kArguments));
  const LiveFrame& f = loop.step();
  ASSERT_TRUE(f.status.ok());
  EXPECT_EQ(find(f, 4242)->command, "python3 train.py --batch 16");
  EXPECT_EQ(find(f, 4444)->command.find("hunter2"), std::string::npos);
  EXPECT_NE(find(f, 4444)->command.find("--password=***"), std::string::npos);
}

TEST(LiveLoop, RunsAtItsIntervalAndStopsFromAnotherThread) {
  auto sampler = open_fake("synthetic_2gpu.txt");
  LiveLoop loop(*sampler, fast(CommandLine::kExecutable));
  std::vector<int64_t> at_ms;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(560));
    loop.stop();
  });
  loop.run([&](const LiveFrame& f) {
    EXPECT_TRUE(f.status.ok());
    EXPECT_EQ(f.index, static_cast<int64_t>(at_ms.size()));
    at_ms.push_back(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
    return true;
  });
  stopper.join();
  // Ticks at 100, 200, ... 500 ms. A frame never comes before its tick and never more than
  // one per tick, so at most five; a loaded host may delay frames (and then skip ticks), so
  // the gaps between frames and the lower count are not asserted.
  ASSERT_GE(at_ms.size(), 1u);
  EXPECT_LE(at_ms.size(), 5u);
  for (size_t i = 0; i < at_ms.size(); ++i) EXPECT_GE(at_ms[i], 100 * static_cast<int64_t>(i + 1)) << i;
  EXPECT_TRUE(loop.stopped());
}

TEST(LiveLoop, ShouldStopAndOnFrameEndTheLoop) {
  auto sampler = open_fake("synthetic_2gpu.txt");
  std::atomic<bool> flag{false};
  LiveLoopOptions o = fast(CommandLine::kExecutable);
  o.should_stop = [&] { return flag.load(); };
  LiveLoop loop(*sampler, o);
  int frames = 0;
  loop.run([&](const LiveFrame&) {
    if (++frames == 2) flag = true;  // Seen within 50 ms of the next wait.
    return true;
  });
  EXPECT_EQ(frames, 2);
  LiveLoop counted(*sampler, fast(CommandLine::kExecutable));
  frames = 0;
  counted.run([&](const LiveFrame& f) { return ++frames, f.index + 1 < 3; });
  EXPECT_EQ(frames, 3);
}

}  // namespace
}  // namespace gpuscope::nvml
