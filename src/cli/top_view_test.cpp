// What `top` draws (top_view.h) at every screen size: nothing wider or taller than the screen,
// columns dropped in the stated order, numbers never cut, sparklines, the no-GPM statement.
#include "cli/top_view.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

namespace gpuscope::cli {
namespace {

struct Fixture {
  std::vector<nvml::DeviceInfo> devices;
  nvml::LiveSnapshot snap;
  std::vector<Signal> signals;
  TopHistory history;

  explicit Fixture(bool gpm, int gpus = 2, int processes = 2) {
    for (int i = 0; i < gpus; ++i) {
      nvml::DeviceInfo d;
      d.index = i;
      d.name = "NVIDIA H200";
      d.gpm_supported = gpm;
      devices.push_back(d);
      DeviceSample s;
      s.device = i;
      s.gpu_util_pct = i == 0 ? 100.0 : 12.5;
      if (gpm) {
        s.sm_active_pct = i == 0 ? 96.5 : 3.0;
        s.tensor_active_pct = 93.8;
        s.sm_occupancy_pct = 14.2;
        s.dram_bw_pct = 17.0;
      }
      s.memory_used_bytes = (uint64_t{16} << 30) * static_cast<uint64_t>(i + 1);
      s.memory_total_bytes = uint64_t{150754820096};
      s.power_w = 650;
      s.temperature_c = 55;
      snap.devices.push_back(s);
    }
    for (int p = 0; p < processes; ++p) {
      ProcessSample ps;
      ps.device = p % gpus;
      ps.pid = 4242 + static_cast<uint32_t>(p);
      ps.memory_used_bytes = uint64_t{1} << (30 + p % 4);
      ps.sm_util_pct = 50;
      ps.user = "alice";
      ps.command = "python3 train.py --config configs/a_rather_long_experiment_name.yaml";
      ps.pod_uid = "8f9a5b2c-1d2e-4f3a-9b8c-7d6e5f4a3b2c";
      snap.processes.push_back(ps);
    }
    for (int i = 0; i < 5; ++i) history.add(snap);
  }
  TopInput input(TopSort sort = TopSort::kGpu) const {
    TopInput in;
    in.devices = &devices;
    in.snapshot = &snap;
    in.signals = &signals;
    in.history = &history;
    in.driver = "550.127.08";
    in.when = "2026-12-01 18:00:00";
    in.sort = sort;
    in.keys = true;
    return in;
  }
};

std::string header(const std::vector<TopLine>& lines) {
  for (const TopLine& l : lines) {
    if (l.text.rfind("GPU ", 0) == 0 && l.text.find("UTIL") != std::string::npos) return l.text;
  }
  return "";
}

TEST(TopView, EveryLineFitsEveryScreen) {
  for (bool gpm : {true, false}) {
    Fixture f(gpm, 4, 12);
    for (size_t width = 40; width <= 200; width += 7) {
      for (size_t height : {10u, 24u, 50u}) {
        const auto lines = render_top(f.input(), width, height);
        EXPECT_LE(lines.size(), height);
        for (const TopLine& l : lines)
          EXPECT_LE(display_width(l.text), width) << width << "x" << height << ": " << l.text;
      }
    }
  }
}

TEST(TopView, ColumnsGoInTheStatedOrderAndNumbersStayWhole) {
  Fixture f(true);
  // Wide: every column. Then, narrowing, TEMP goes before POWER, POWER before OCC ...
  const std::vector<std::string> order = {"TEMP", "POWER", "OCC", "DRAM", "NAME", "MEM GiB", "TENSOR"};
  std::set<std::string> gone;
  for (size_t width = 200; width >= 40; --width) {
    const std::string h = header(render_top(f.input(), width, 0));
    for (size_t i = 0; i < order.size(); ++i) {
      const bool shown = h.find(order[i]) != std::string::npos;
      if (!shown) gone.insert(order[i]);
      // A column is gone only if every column before it in the order is gone too.
      if (!shown) {
        for (size_t j = 0; j < i; ++j)
          EXPECT_TRUE(gone.count(order[j])) << width << ": " << order[i] << " before " << order[j];
      }
    }
    EXPECT_NE(h.find("UTIL"), std::string::npos);
    EXPECT_NE(h.find("SM ACT"), std::string::npos);
    const auto lines = render_top(f.input(), width, 0);
    bool whole = false;
    for (const TopLine& l : lines) whole |= l.text.find(" 100.0%  96.5%") != std::string::npos;
    EXPECT_TRUE(whole) << width;
  }
  EXPECT_GE(gone.size(), 5u);  // At 40 columns GPU, UTIL, SM ACT, TENSOR and MEM still fit.
}

TEST(TopView, HistorySparklinesAndTheNoGpmStatement) {
  Fixture with(true), without(false);
  auto text = [](const std::vector<TopLine>& lines) {
    std::string all;
    for (const TopLine& l : lines) all += l.text + "\n";
    return all;
  };
  const std::string a = text(render_top(with.input(), 80, 24));
  EXPECT_NE(a.find("util █████"), std::string::npos) << a;  // 100% five times.
  EXPECT_NE(a.find("SM act █████"), std::string::npos) << a;
  EXPECT_NE(a.find("SM act ▁▁▁▁▁"), std::string::npos) << a;  // 3%.
  EXPECT_EQ(a.find("GPM"), std::string::npos);
  const std::string b = text(render_top(without.input(), 80, 24));
  EXPECT_NE(b.find("SM act n/a (no GPM)"), std::string::npos) << b;
  EXPECT_NE(b.find("GPU 0, 1: SM active, tensor, occupancy and DRAM activity are not"), std::string::npos) << b;
  EXPECT_EQ(sparkline({std::nullopt, 0.0, 50.0, 100.0}, 6), "·▁▅█  ");
}

TEST(TopView, SortOrdersGpusAndProcesses) {
  Fixture f(true, 2, 3);
  auto first_gpu = [](const std::vector<TopLine>& lines) {
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
      if (lines[i].text.find("UTIL") != std::string::npos) return lines[i + 1].text.substr(0, 3);
    }
    return std::string();
  };
  EXPECT_EQ(first_gpu(render_top(f.input(TopSort::kGpu), 120, 0)), "  0");
  EXPECT_EQ(first_gpu(render_top(f.input(TopSort::kMem), 120, 0)), "  1");  // 32 GiB before 16.
  EXPECT_EQ(first_gpu(render_top(f.input(TopSort::kSm), 120, 0)), "  0");
  EXPECT_EQ(top_sort_from_name("mem"), TopSort::kMem);
  EXPECT_FALSE(top_sort_from_name("colour"));
}

TEST(TopView, ShortScreensHideProcessesFirstAndSaySo) {
  Fixture f(true, 2, 30);
  const auto lines = render_top(f.input(), 80, 24);
  EXPECT_EQ(lines.size(), 24u);
  bool said = false;
  for (const TopLine& l : lines) said |= l.text.find("more processes") != std::string::npos;
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace gpuscope::cli
