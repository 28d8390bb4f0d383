// tah's bit allocation: which units (tokens or tiles) get the high bit width.
//
// Units are ranked by entropy; the round(r·U) units of highest entropy get high bits and the rest
// low bits (r = high_ratio, U = units, round half away from zero, so r = 0.8 over 10 units gives
// 8 and r = 0.25 over 2 units gives 1). Ties in entropy are broken by unit index: of two units
// with equal entropy the one with the larger index ranks higher. Selection works on the
// entropies' order-preserving bits: a 2048-bin histogram over their range finds the bin of the
// threshold, nth_element on that bin's keys finds it, a last pass settles ties by index. O(U),
// and several times faster than nth_element over all units on 10^5 tiles.
//
// The receiver never repeats this: the decision travels as a bitmap. Thread-compatible; an
// instance only keeps scratch memory between calls.
#pragma once

#include <cstdint>
#include <vector>

namespace geotrain::compression {

// How many of `units` units get high bits at ratio `high_ratio` (in 0..1).
int64_t HighUnitCount(int64_t units, double high_ratio);

class TahBitAllocator {
 public:
  // Sets is_high[u] to 1 for the HighUnitCount(units, high_ratio) units of highest entropy and
  // to 0 for the others. Entropies must be finite (TahUnitEntropy guarantees it).
  void Allocate(const float* entropy, int64_t units, double high_ratio,
                std::vector<uint8_t>* is_high);

 private:
  std::vector<uint32_t> keys_;
  std::vector<uint32_t> histogram_;
  std::vector<uint32_t> candidates_;
};

}  // namespace geotrain::compression
