// Time intervals on one clock (ns) and the small statistics the analyses share.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuscope {

struct Interval {
  int64_t start_ns;
  int64_t end_ns;
};

// Sorts and merges overlapping intervals; empty ones are dropped.
std::vector<Interval> merge(std::vector<Interval> v);

// Total length of `merged` (sorted, disjoint) within [a, b).
int64_t covered(const std::vector<Interval>& merged, int64_t a, int64_t b);

// Whether t lies inside one of `merged` (sorted, disjoint). *boundary is where that answer next
// changes: the end of that interval, else the start of the next one (INT64_MAX after the last).
bool inside(const std::vector<Interval>& merged, int64_t t, int64_t* boundary);

// The parts of [a, b) not covered by `merged` (sorted, disjoint).
std::vector<Interval> gaps(const std::vector<Interval>& merged, int64_t a, int64_t b);

// 100 * part / whole, 0 when whole is not positive.
double pct(double part, double whole);

// The element at rank p (0..1, rounded down) of `v`, which must not be empty; reorders `v`.
double percentile(std::vector<double>& v, double p);

}  // namespace gpuscope
