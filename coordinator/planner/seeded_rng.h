// A small seeded generator whose sequence is the same on every platform and standard library
// (std::shuffle and std::uniform_int_distribution are not), so plans repeat for a seed.
// Not thread-safe; one per search.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace geotrain::planner {

class SeededRng {
 public:
  explicit SeededRng(uint64_t seed) : state_(seed) {}

  // splitmix64 (Steele, Lea, Flood 2014).
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) for n >= 1 (the modulo bias is below 2^-40 for the sizes used here).
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  // Uniform in [lo, hi).
  double Uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(Next() >> 11) * 0x1.0p-53;
  }
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

 private:
  uint64_t state_;
};

}  // namespace geotrain::planner
