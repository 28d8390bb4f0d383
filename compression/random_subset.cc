#include "compression/random_subset.h"

#include <cstddef>

#include "common/hash_random.h"

namespace geotrain::compression {
namespace {

// Uniform integer in [0, bound) (bound >= 1): Lemire, "Fast random integer generation in an
// interval" (2019). Rejects the few draws that would bias the result.
uint64_t UniformBelow(SplitMix64& rng, uint64_t bound) {
  unsigned __int128 product = static_cast<unsigned __int128>(rng.Next()) * bound;
  uint64_t low = static_cast<uint64_t>(product);
  if (low < bound) {
    const uint64_t reject_below = (0 - bound) % bound;  // 2^64 mod bound
    while (low < reject_below) {
      product = static_cast<unsigned __int128>(rng.Next()) * bound;
      low = static_cast<uint64_t>(product);
    }
  }
  return static_cast<uint64_t>(product >> 64);
}

}  // namespace

void SampleSubset(uint64_t seed, uint64_t step, int64_t n, int64_t k,
                  std::vector<uint32_t>* indices) {
  indices->clear();
  if (k <= 0 || n <= 0) return;
  const bool complement = k > n / 2;
  const int64_t draws = complement ? n - k : k;

  // Floyd: for j = n - draws .. n - 1, pick t uniform in [0, j]; take t, or j if t is taken.
  // Each step keeps the chosen set a uniform subset of [0, j].
  std::vector<uint64_t> bitmap((n + 63) / 64, 0);
  SplitMix64 rng(HashCounter(seed, step, 0));
  for (int64_t j = n - draws; j < n; ++j) {
    const uint64_t t = UniformBelow(rng, static_cast<uint64_t>(j) + 1);
    const uint64_t bit = uint64_t{1} << (t & 63);
    if (bitmap[t >> 6] & bit) {
      bitmap[j >> 6] |= uint64_t{1} << (j & 63);
    } else {
      bitmap[t >> 6] |= bit;
    }
  }

  indices->reserve(k);
  const size_t words = bitmap.size();
  for (size_t w = 0; w < words; ++w) {
    uint64_t bits = complement ? ~bitmap[w] : bitmap[w];
    if (complement && w + 1 == words && (n & 63)) bits &= (uint64_t{1} << (n & 63)) - 1;
    while (bits) {
      indices->push_back(static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits)));
      bits &= bits - 1;
    }
  }
}

}  // namespace geotrain::compression
