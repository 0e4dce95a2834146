#include "core/intervals.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace gpuscope {

std::vector<Interval> merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.end_ns <= i.start_ns) continue;
    if (!out.empty() && i.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

bool inside(const std::vector<Interval>& merged, int64_t t, int64_t* boundary) {
  const auto it =
      std::upper_bound(merged.begin(), merged.end(), t, [](int64_t v, const Interval& i) { return v < i.end_ns; });
  if (it == merged.end()) {
    *boundary = std::numeric_limits<int64_t>::max();
    return false;
  }
  *boundary = it->start_ns <= t ? it->end_ns : it->start_ns;
  return it->start_ns <= t;
}

int64_t covered(const std::vector<Interval>& merged, int64_t a, int64_t b) {
  int64_t total = 0;
  auto it =
      std::lower_bound(merged.begin(), merged.end(), a, [](const Interval& i, int64_t t) { return i.end_ns <= t; });
  for (; it != merged.end() && it->start_ns < b; ++it) {
    total += std::max<int64_t>(0, std::min(b, it->end_ns) - std::max(a, it->start_ns));
  }
  return total;
}

std::vector<Interval> gaps(const std::vector<Interval>& merged, int64_t a, int64_t b) {
  std::vector<Interval> out;
  int64_t cursor = a;
  auto it =
      std::lower_bound(merged.begin(), merged.end(), a, [](const Interval& i, int64_t t) { return i.end_ns <= t; });
  for (; it != merged.end() && it->start_ns < b; ++it) {
    if (it->start_ns > cursor) out.push_back({cursor, it->start_ns});
    cursor = std::max(cursor, it->end_ns);
  }
  if (cursor < b) out.push_back({cursor, b});
  return out;
}

double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

double percentile(std::vector<double>& v, double p) {
  const size_t k = static_cast<size_t>(std::clamp(p, 0.0, 1.0) * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace gpuscope
