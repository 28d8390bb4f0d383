#include "compression/topk_selection.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numeric>

#include "common/half.h"
#include "common/hash_random.h"
#include "compression/float_sums.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GEOTRAIN_TOPK_AVX2 1
#endif

namespace geotrain::compression {
namespace {

constexpr int64_t kSampleSize = 16384;
// Below this many values sampling costs more than it saves: every position is a candidate.
constexpr int64_t kSampleFrom = 4 * kSampleSize;
// Standard deviations of the sample's count that the floor is placed below the expected rank.
constexpr double kFloorMargin = 4.0;
constexpr uint64_t kSampleSeed = 0x746f706b2d73616dull;  // "topk-sam"

// |v| as an integer: for non-negative floats the integer order is the numeric order, and NaN
// sorts above infinity, so comparisons are total and never undefined. Keys are < 2^31.
inline uint32_t MagnitudeKey(float v) { return FloatBits(v) & 0x7fffffffu; }

// A magnitude key such that, with overwhelming probability, at least k values are at or above
// it; 0 (every value) when sampling does not pay.
uint32_t EstimateFloor(const float* x, int64_t n, int64_t k, std::vector<uint32_t>* sample) {
  if (n < kSampleFrom) return 0;
  sample->resize(kSampleSize);
  for (int64_t j = 0; j < kSampleSize; ++j) {
    (*sample)[j] = MagnitudeKey(x[HashCounter(kSampleSeed, n, j) % static_cast<uint64_t>(n)]);
  }
  // The sample's count above the true k-th magnitude is Binomial(s, k/n): aim kFloorMargin
  // standard deviations (plus a little) past its mean.
  const double expected = static_cast<double>(kSampleSize) * k / n;
  const double rank = std::ceil(expected + kFloorMargin * std::sqrt(expected) + 4);
  if (rank >= kSampleSize) return 0;
  const auto nth = sample->begin() + (static_cast<int64_t>(rank) - 1);
  std::nth_element(sample->begin(), nth, sample->end(), std::greater<uint32_t>());
  return *nth;
}

#ifdef GEOTRAIN_TOPK_AVX2
inline void AccumulateSquares(__m256 v, __m256d* lo, __m256d* hi) {
  const __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
  const __m256d b = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
  *lo = _mm256_fmadd_pd(a, a, *lo);
  *hi = _mm256_fmadd_pd(b, b, *hi);
}

// For each 8-bit lane mask, the set lanes in increasing order (one byte each, rest zero): the
// permutation that packs the selected lanes of a vector to its front.
constexpr std::array<uint64_t, 256> MakeLeftPackTable() {
  std::array<uint64_t, 256> table{};
  for (int mask = 0; mask < 256; ++mask) {
    uint64_t lanes = 0;
    int out = 0;
    for (int lane = 0; lane < 8; ++lane) {
      if (mask & (1 << lane)) lanes |= static_cast<uint64_t>(lane) << (8 * out++);
    }
    table[mask] = lanes;
  }
  return table;
}
constexpr std::array<uint64_t, 256> kLeftPack = MakeLeftPackTable();
#endif

// Stores the positions whose magnitude key is >= floor (floor >= 1) in `positions`, in
// increasing order, with their keys in `keys`, and returns Σx² over all of x: one streaming
// pass, so later steps never gather from x again. The vector path appends with left-packing
// stores rather than a branch per selected value.
double CollectCandidates(const float* x, int64_t n, uint32_t floor,
                         std::vector<uint32_t>* positions, std::vector<uint32_t>* keys) {
  size_t count = 0;
  if (positions->size() < 4096) positions->resize(4096);
  keys->resize(positions->size());
  int64_t i = 0;
  double sum = 0;
#ifdef GEOTRAIN_TOPK_AVX2
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i below = _mm256_set1_epi32(static_cast<int>(floor - 1));
  const __m256i lane_index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
  // Appends the selected lanes of one vector of 8 keys at positions base..base+7.
  auto pack = [&](__m256i k, unsigned mask, int64_t base) {
    const __m256i order =
        _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(kLeftPack[mask])));
    const __m256i pos = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(base)), lane_index);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(positions->data() + count),
                        _mm256_permutevar8x32_epi32(pos, order));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(keys->data() + count),
                        _mm256_permutevar8x32_epi32(k, order));
    count += __builtin_popcount(mask);
  };
  for (; i + 16 <= n; i += 16) {
    const __m256 v0 = _mm256_loadu_ps(x + i);
    const __m256 v1 = _mm256_loadu_ps(x + i + 8);
    AccumulateSquares(v0, &s0, &s1);
    AccumulateSquares(v1, &s2, &s3);
    const __m256i k0 = _mm256_and_si256(_mm256_castps_si256(v0), abs_mask);
    const __m256i k1 = _mm256_and_si256(_mm256_castps_si256(v1), abs_mask);
    const unsigned m0 = static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(k0, below))));
    const unsigned m1 = static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(k1, below))));
    // Most 16-value groups hold no candidate at the usual densities: skip them cheaply.
    if ((m0 | m1) == 0) continue;
    if (count + 16 > positions->size()) {  // rare: amortised doubling
      positions->resize(2 * positions->size());
      keys->resize(positions->size());
    }
    pack(k0, m0, i);
    pack(k1, m1, i + 8);
  }
  s0 = _mm256_add_pd(s0, s2);
  s1 = _mm256_add_pd(s1, s3);
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(s0, s1));
  sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
#endif
  for (; i < n; ++i) {
    sum += static_cast<double>(x[i]) * x[i];
    const uint32_t key = MagnitudeKey(x[i]);
    if (key >= floor) {
      if (count == positions->size()) {
        positions->resize(2 * positions->size());
        keys->resize(positions->size());
      }
      (*positions)[count] = static_cast<uint32_t>(i);
      (*keys)[count++] = key;
    }
  }
  positions->resize(count);
  keys->resize(count);
  return sum;
}

struct KthKey {
  uint32_t key;  // the k-th largest key T
  int64_t ties;  // how many keys equal to T are among the k largest (k - #keys above T), >= 1
};

// The k-th largest of `keys` (1 <= k <= size, keys < 2^31) by most-significant-digit radix
// select: digits of 11, 10 and 10 bits, each round a histogram pass over the keys that still
// share the chosen prefix, compacted in place. Linear time whatever the distribution; `keys` is
// overwritten.
KthKey KthLargestKey(std::vector<uint32_t>* keys, int64_t k) {
  constexpr int kShift[3] = {20, 10, 0};
  constexpr uint32_t kDigitMask[3] = {0x7ff, 0x3ff, 0x3ff};
  uint32_t* data = keys->data();
  size_t size = keys->size();
  uint32_t prefix = 0;
  std::array<int64_t, 2048> histogram;
  for (int round = 0; round < 3; ++round) {
    const int shift = kShift[round];
    const uint32_t digit_mask = kDigitMask[round];
    std::fill(histogram.begin(), histogram.begin() + digit_mask + 1, 0);
    for (size_t t = 0; t < size; ++t) ++histogram[(data[t] >> shift) & digit_mask];
    // The digit of T: the counts of larger digits stay below k.
    int64_t above = 0;
    uint32_t digit = digit_mask;
    while (above + histogram[digit] < k) above += histogram[digit--];
    k -= above;
    prefix |= digit << shift;
    size_t kept = 0;
    for (size_t t = 0; t < size; ++t) {
      data[kept] = data[t];
      kept += ((data[t] >> shift) & digit_mask) == digit;
    }
    size = kept;
  }
  return {prefix, k};  // every key left equals T; k counts the ones that make the cut
}

}  // namespace

double TopKSelector::Select(const float* x, int64_t n, int64_t k, std::vector<uint32_t>* indices) {
  indices->clear();
  if (k <= 0) return SumSquares(x, n);
  k = std::min(k, n);

  const uint32_t floor = EstimateFloor(x, n, k, &order_keys_);
  double norm_sq = 0;
  bool every_position = floor == 0;
  if (!every_position) {
    norm_sq = CollectCandidates(x, n, floor, &candidates_, &candidate_keys_);
    every_position = static_cast<int64_t>(candidates_.size()) < k;  // the sample misled us
  } else {
    norm_sq = SumSquares(x, n);
  }
  if (every_position) {
    candidates_.resize(n);
    std::iota(candidates_.begin(), candidates_.end(), 0u);
    candidate_keys_.resize(n);
    for (int64_t i = 0; i < n; ++i) candidate_keys_[i] = MagnitudeKey(x[i]);
  }
  if (static_cast<int64_t>(candidates_.size()) == k) {
    indices->assign(candidates_.begin(), candidates_.end());
    return norm_sq;
  }

  // The exact k-th largest magnitude T (on a copy: the keys stay in position order).
  order_keys_.assign(candidate_keys_.begin(), candidate_keys_.end());
  const KthKey kth = KthLargestKey(&order_keys_, k);
  int64_t ties = kth.ties;  // values equal to T that make the cut: the lowest positions

  indices->resize(k);
  uint32_t* out = indices->data();
  for (size_t t = 0; t < candidates_.size(); ++t) {
    const uint32_t key = candidate_keys_[t];
    const bool tie = key == kth.key && ties > 0;
    ties -= tie;
    if (key > kth.key || tie) *out++ = candidates_[t];
  }
  return norm_sq;
}

}  // namespace geotrain::compression
