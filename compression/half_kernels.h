// Kernels over fp16 values held in byte buffers (frame payloads, activation cache slots): the
// conversions the delta codecs need, with their range checks, and the cache update
// m <- fp16(m + delta) that sender and receiver must compute identically.
//
// Byte pointers carry no alignment promise: an fp16 run inside a payload may start at an odd
// offset, so values are read and written as little-endian byte pairs. Each kernel has an
// AVX2/F16C path and a scalar path (the *Scalar functions) that give bit-identical values: both
// round to nearest even and clamp the same way, so two ends built for different CPUs still agree.
// Only the ErrorSums, which are statistics, may differ in the last bits between the two paths.
//
// Stateless; safe to call from any thread.
#pragma once

#include <cstdint>

#include "compression/types.h"

namespace geotrain::compression {

// The largest finite fp16 value: the range an fp16 activation cache can hold.
constexpr float kHalfMax = 65504.0f;

// out = fp16(in). Returns false if any value is NaN, infinite or beyond ±kHalfMax (out is then
// unspecified). Adds Σ(in - float(out))² and Σin² to `error` when it is non-null.
bool FloatToHalfInRange(const float* in, int64_t n, uint8_t* out, ErrorSums* error);

// out = float(in). Returns false if any value is an fp16 infinity or NaN.
bool HalfToFloatFinite(const uint8_t* in, int64_t n, float* out);

// delta = a - float(m). Returns false if any `a` is NaN, infinite or beyond ±kHalfMax.
bool SubtractHalf(const float* a, const uint8_t* m, int64_t n, float* delta);

// delta = a - m (delta may alias m). Returns false under the same condition as SubtractHalf.
bool SubtractFloat(const float* a, const float* m, int64_t n, float* delta);

// The fp16 cache update: m <- fp16(clamp(float(m) + delta, -kHalfMax, kHalfMax)). When non-null,
// `reconstruction` (which may alias `delta`) receives float(new m); when `reference` is non-null,
// Σ(reference - float(new m))² and Σreference² are added to `error`.
void AddDeltaToHalf(const float* delta, int64_t n, uint8_t* m, float* reconstruction,
                    const float* reference, ErrorSums* error);

// The same update kept in float32 (delta-lowbits reconstructs before re-quantizing):
// out = clamp(m + delta, -kHalfMax, kHalfMax); `out` may alias `m` or `delta`.
void AddDeltaToFloat(const float* m, const float* delta, int64_t n, float* out,
                     const float* reference, ErrorSums* error);

// Scalar references of the kernels whose values must be bit-identical across builds (tests
// compare them with the vector paths above).
bool FloatToHalfInRangeScalar(const float* in, int64_t n, uint8_t* out, ErrorSums* error);
bool HalfToFloatFiniteScalar(const uint8_t* in, int64_t n, float* out);
bool SubtractHalfScalar(const float* a, const uint8_t* m, int64_t n, float* delta);
void AddDeltaToHalfScalar(const float* delta, int64_t n, uint8_t* m, float* reconstruction,
                          const float* reference, ErrorSums* error);

}  // namespace geotrain::compression
