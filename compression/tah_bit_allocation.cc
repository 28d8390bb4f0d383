#include "compression/tah_bit_allocation.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace geotrain::compression {
namespace {

// A key whose unsigned order is the order of the entropies (-0 and +0 alike).
inline uint32_t OrderedKey(float entropy) {
  const float canonical = entropy + 0.0f;
  uint32_t bits;
  std::memcpy(&bits, &canonical, 4);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

constexpr int kBinBits = 11;

}  // namespace

int64_t HighUnitCount(int64_t units, double high_ratio) {
  const int64_t n = std::llround(high_ratio * static_cast<double>(units));
  return std::clamp<int64_t>(n, 0, units);
}

void TahBitAllocator::Allocate(const float* entropy, int64_t units, double high_ratio,
                               std::vector<uint8_t>* is_high) {
  is_high->resize(units);
  const int64_t high = HighUnitCount(units, high_ratio);
  const int64_t low = units - high;
  if (high == 0 || low == 0) {
    std::fill(is_high->begin(), is_high->end(), high > 0 ? 1 : 0);
    return;
  }
  keys_.resize(units);
  for (int64_t u = 0; u < units; ++u) keys_[u] = OrderedKey(entropy[u]);

  // Select the key with rank `low` (0-based, ascending): a histogram of 2048 bins spread over
  // [min key, max key] finds its bin, then nth_element on that bin's keys (typically a few
  // hundred) finds the key. `rank` ends as its rank among the units sharing it.
  uint32_t lowest = keys_[0], highest = keys_[0];
  for (int64_t u = 1; u < units; ++u) {
    lowest = std::min(lowest, keys_[u]);
    highest = std::max(highest, keys_[u]);
  }
  const uint32_t span = highest - lowest;
  const int span_bits = span == 0 ? 0 : 32 - __builtin_clz(span);
  const int shift = std::max(0, span_bits - kBinBits);
  histogram_.assign(4 << kBinBits, 0);
  int64_t u = 0;
  for (; u + 4 <= units; u += 4) {  // 4 interleaved copies keep increments of one bin apart
    for (int c = 0; c < 4; ++c) ++histogram_[(c << kBinBits) + ((keys_[u + c] - lowest) >> shift)];
  }
  for (; u < units; ++u) ++histogram_[(keys_[u] - lowest) >> shift];
  uint32_t bin = 0;
  int64_t rank = low;
  for (;; ++bin) {
    int64_t count = 0;
    for (int c = 0; c < 4; ++c) count += histogram_[(c << kBinBits) + bin];
    if (rank < count) break;
    rank -= count;
  }
  candidates_.clear();
  for (int64_t v = 0; v < units; ++v) {
    if (((keys_[v] - lowest) >> shift) == bin) candidates_.push_back(keys_[v]);
  }
  std::nth_element(candidates_.begin(), candidates_.begin() + rank, candidates_.end());
  const uint32_t threshold = candidates_[rank];
  for (uint32_t key : candidates_) rank -= key < threshold ? 1 : 0;
  // Above the threshold: high; below: low; equal: the first `rank` by index are low.
  int64_t equal_seen = 0;
  for (int64_t v = 0; v < units; ++v) {
    const uint32_t key = keys_[v];
    if (key == threshold) {
      (*is_high)[v] = equal_seen++ >= rank ? 1 : 0;
    } else {
      (*is_high)[v] = key > threshold ? 1 : 0;
    }
  }
}

}  // namespace geotrain::compression
