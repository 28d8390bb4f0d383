// Timing helpers shared by the benchmarks: best-of-N wall time and a memcpy baseline.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <vector>

namespace geotrain::bench {

// The shortest of `reps` runs of `fn`, in seconds (the least disturbed by other processes).
template <typename Fn>
double BestSeconds(int reps, Fn&& fn) {
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  return best;
}

// Single-thread memcpy bandwidth in GB/s for buffers of `bytes` (source bytes per second).
inline double MemcpyGbps(size_t bytes, int reps) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  std::memcpy(dst.data(), src.data(), bytes);  // fault the pages in first
  const double s = BestSeconds(reps, [&] {
    std::memcpy(dst.data(), src.data(), bytes);
    asm volatile("" : : "r"(dst.data()) : "memory");
  });
  return bytes / s / 1e9;
}

}  // namespace geotrain::bench
