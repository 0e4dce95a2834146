// What `gpuscope top` draws, as lines that fit a terminal of W columns and H rows (a pure
// function of the readings, so it is tested at any size without a terminal).
//
// Fitting, in this order, never cutting a number or a header mid-field:
// GPU table, columns GPU UTIL SM-ACT TENSOR OCC DRAM MEM POWER TEMP NAME (each as wide as its
// widest value this frame):
//   1. NAME narrows to 12 columns (a shortened name ends in "…"),
//   2. TEMP, 3. POWER, 4. OCC, 5. DRAM, 6. NAME, 7. MEM, 8. TENSOR are dropped;
//   GPU, UTIL and SM ACT always stay.
// Under each GPU, its history: utilization beside SM active over the last samples, as
// sparklines (▁ 0% .. █ 100%, "·" not measured), as wide as the row allows (at most
// kTopHistory samples).
// Processes, columns GPU PID USER MEM SM% POD/JOB COMMAND: POD/JOB is dropped when no process
// has one, then USER narrows to 8, then POD/JOB narrows to 16, then is dropped; COMMAND, the
// last field, takes the rest and ends in "…" when shortened (at least 8 columns, else dropped).
// Rows: when the screen is short, process rows go first (a line says how many are hidden),
// then the history lines, then waste-signal lines (a line says how many).
// GPUs without GPM get one plain statement that SM and tensor activity are not available
// there and why.
// Widths are counted in characters (UTF-8 code points): everything here is one column wide;
// other users' text goes through terminal_safe first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/signals.h"
#include "nvml/sampler.h"
#include "render/text_layout.h"  // display_width

namespace gpuscope::cli {

// Order of the GPU rows and of the processes: `gpu` by index (processes by GPU, then memory),
// the others largest first (a reading not measured last).
enum class TopSort { kGpu, kUtil, kSm, kMem };
inline constexpr std::string_view kTopSortNames[] = {"gpu", "util", "sm", "mem"};
std::optional<TopSort> top_sort_from_name(std::string_view name);
constexpr std::string_view top_sort_name(TopSort s) { return kTopSortNames[static_cast<size_t>(s)]; }

inline constexpr size_t kTopHistory = 60;

// The last kTopHistory readings of each device (parallel to Sampler::devices()).
class TopHistory {
 public:
  void add(const nvml::LiveSnapshot& snap);
  const std::deque<std::optional<double>>& util(size_t device) const { return util_[device]; }
  const std::deque<std::optional<double>>& sm(size_t device) const { return sm_[device]; }
  size_t devices() const { return util_.size(); }

 private:
  std::vector<std::deque<std::optional<double>>> util_, sm_;
};

// The last `n` readings as a sparkline of exactly n characters, oldest first, padded on the
// right with spaces while fewer were taken (it fills, then scrolls left).
std::string sparkline(const std::deque<std::optional<double>>& values, size_t n);

struct TopLine {
  std::string text;
  enum Style { kPlain, kHeader, kAlert } style = kPlain;
};

struct TopInput {
  const std::vector<nvml::DeviceInfo>* devices = nullptr;  // Sampler::devices()
  const nvml::LiveSnapshot* snapshot = nullptr;
  const std::vector<Signal>* signals = nullptr;
  const TopHistory* history = nullptr;
  std::string driver;
  double interval_s = 1;
  std::string when;  // Local time of the frame, "2026-12-01 17:00:00".
  TopSort sort = TopSort::kGpu;
  bool keys = false;                  // Show the key help (a terminal with a keyboard).
  std::vector<std::string> warnings;  // The sampler's, one line each (shown after the signals).
};

// The frame, every line at most `width` characters (width >= 40), at most `height` lines
// (0: no limit).
std::vector<TopLine> render_top(const TopInput& in, size_t width, size_t height);

}  // namespace gpuscope::cli
