// The time range every reader guarantees for the events it hands to the core, so that sums
// and differences in the analyses cannot overflow int64 (signed overflow is undefined
// behaviour, and in practice turned "busy 67.8%" into 100% and windows into 9.2e12 ms).
//
// Contract (kineto_reader, capture): every event's start and end (and every device sample's
// time) lies in [-kMaxEventTimeNs, kMaxEventTimeNs], end >= start, and end - start <=
// kMaxEventDurationNs. So any two times differ by at most 6e18, a time plus such a difference
// stays below INT64_MAX (9.22e18), and 9,000 durations sum without overflow. Events outside
// this are dropped with a warning naming the first one's offset, never clamped silently.
#pragma once

#include <cstdint>
#include <optional>

namespace gpuscope {

// 3e18 ns after the epoch is the year 2065 on CLOCK_REALTIME; profiler clocks are smaller.
inline constexpr int64_t kMaxEventTimeNs = 3'000'000'000'000'000'000;
// About 11.6 days: longer than any profile, far below the overflow range.
inline constexpr int64_t kMaxEventDurationNs = 1'000'000'000'000'000;

inline bool event_time_ok(int64_t t) { return t >= -kMaxEventTimeNs && t <= kMaxEventTimeNs; }

// start + duration when both are in range (then the sum cannot overflow), else nullopt.
inline std::optional<int64_t> checked_event_end(int64_t start_ns, int64_t duration_ns) {
  if (!event_time_ok(start_ns) || duration_ns < 0 || duration_ns > kMaxEventDurationNs) return std::nullopt;
  const int64_t end = start_ns + duration_ns;
  if (!event_time_ok(end)) return std::nullopt;
  return end;
}

}  // namespace gpuscope
