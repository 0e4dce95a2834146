// Host clock readings as int64 nanoseconds. Header only, so that the injection libraries, which
// link nothing of gpuscope's, share it with the sampler.
#pragma once

#include <time.h>

#include <cstdint>

namespace gpuscope {

inline int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The clock domain of every timestamp gpuscope records (capture_format.h).
inline int64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }

// For intervals and timeouts: never jumps.
inline int64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }

}  // namespace gpuscope
