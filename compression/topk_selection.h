// Exact top-k selection by magnitude in O(n), the sender side of the topk codec (MCBench).
//
// Ties between equal magnitudes go to the lower index, so the selection is a pure function of
// the input. The result lists the chosen positions in increasing order, ready for the sparse
// wire format (sparse_values.h).
//
// How (one streaming pass over x in the common case):
//   1. estimate a magnitude floor from a fixed pseudo-random sample of 16384 values, placed about
//      4 standard deviations below the sample's k-th largest so that, with overwhelming
//      probability, at least k values lie at or above it;
//   2. one pass collects the positions at or above the floor (and Σx², for free);
//   3. nth_element over the few candidates finds the exact k-th magnitude T; the output keeps
//      every candidate above T and the first ones equal to T.
// If the floor was too high (fewer than k candidates) the pass is redone with every position a
// candidate, so the result never depends on the sample, only the time does.
//
// Not thread-safe per instance (it owns scratch buffers); use one selector per thread.
#pragma once

#include <cstdint>
#include <vector>

namespace geotrain::compression {

class TopKSelector {
 public:
  // Fills `indices` with the positions of the k largest |x[i]| (k <= n <= 2^32), increasing, and
  // returns Σx² in double. NaN ranks above every number and infinity as a number; a non-finite
  // return value tells the caller to reject the input.
  double Select(const float* x, int64_t n, int64_t k, std::vector<uint32_t>* indices);

 private:
  std::vector<uint32_t> candidates_;      // positions at or above the sampled floor, increasing
  std::vector<uint32_t> candidate_keys_;  // their magnitude keys, in the same order
  std::vector<uint32_t> order_keys_;      // scratch for nth_element (sample, then candidates)
};

}  // namespace geotrain::compression
