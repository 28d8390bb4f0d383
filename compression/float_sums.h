// Squared norms and finiteness checks over float32 buffers, shared by the sparse and low-rank
// codecs (topk, randk, powersgd).
//
// Sums are accumulated in double: an encode reports ||x - x̂||² as ||x||² minus the kept energy,
// and float accumulation over millions of values would leave that difference mostly rounding
// noise. Stateless free functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace geotrain::compression {

// Σ x[i]² in double. Non-finite input gives a non-finite result (the callers' cheap NaN/inf test).
double SumSquares(const float* x, int64_t n);

// Σ (a[i] - b[i])² in double (differences taken in float, as the receiver's x̂ is float).
double SumSquaredDifferences(const float* a, const float* b, int64_t n);

// Index of the first NaN or infinity in x, or -1 when every value is finite.
int64_t FindNonFinite(const float* x, int64_t n);

// OK when x is all finite, else INVALID_ARGUMENT naming the first offender:
// "topk.input[17]: NaN cannot be encoded".
Status CheckFinite(const float* x, int64_t n, const std::string& field);

}  // namespace geotrain::compression
