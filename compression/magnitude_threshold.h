// Top-k by magnitude without sorting: finds the k-th largest |value| of a set (radix select on
// the float bit patterns), so a caller can keep exactly k values in one further pass.
//
// Keeping rule: every value with |v| > magnitude, plus the first `ties` values (in the set's
// order) with |v| == magnitude. Deterministic, so equal inputs keep equal positions everywhere.
// Free functions over caller-owned buffers; thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

namespace geotrain::compression {

struct MagnitudeThreshold {
  float magnitude = 0;  // the k-th largest |value|
  int64_t ties = 0;     // how many values equal to `magnitude` to keep, first ones first (>= 1)
  int64_t equal = 0;    // how many values have |v| == magnitude (>= ties; equal when all are kept)
};

// Requires 1 <= k <= n and finite values. `scratch` is reused between calls to avoid allocating.
MagnitudeThreshold FindMagnitudeThreshold(const float* values, int64_t n, int64_t k,
                                          std::vector<uint32_t>* scratch);

}  // namespace geotrain::compression
