// Uniform random k-subsets of [0, n) that every machine draws identically, for the randk codec
// (MCBench's random-k).
//
// The generator is SplitMix64 seeded with HashCounter(seed, step, 0), so a (seed, step) pair
// names one subset everywhere and consecutive steps draw independent ones. The subset comes
// from Floyd's algorithm (k draws, no rejection, every k-subset equally likely) over a bitmap of
// n bits; for k > n/2 the complement, n - k draws, is drawn instead. Integers below a bound use
// Lemire's multiply-and-reject method, exact and free of modulo bias.
//
// Stateless free function; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace geotrain::compression {

// Fills `indices` with k distinct positions of [0, n), increasing (0 <= k <= n <= 2^32).
void SampleSubset(uint64_t seed, uint64_t step, int64_t n, int64_t k,
                  std::vector<uint32_t>* indices);

}  // namespace geotrain::compression
