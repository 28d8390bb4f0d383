// The fp16 kernels of the delta codec (half_kernels.h) on a CUDA device, with the same rounding
// and range rules, so the device activation cache stays bit-identical to a CPU one. Each kernel
// is asynchronous on `stream`; `flag` (device, one u32) is set to 1 when a value is out of range,
// `sums` (device, two doubles) receives Σ(reference - result)² and Σreference² where named.
// fp16 byte runs may start at any byte offset (payload sections), so they are read and written as
// little-endian byte pairs.
#pragma once

#include <cstdint>

#include "compression/cuda/device_memory.h"

namespace geotrain::compression::cuda {

// out = fp16(in) as byte pairs; flags values that are NaN, infinite or beyond ±65504. Sums
// Σ(in - float(out))² and Σin².
Status HalfFromFloatOnDevice(const float* in, int64_t n, uint8_t* out, uint32_t* flag, double* sums,
                             Stream stream);
// out = float(in); flags fp16 infinities and NaNs.
Status FloatFromHalfOnDevice(const uint8_t* in, int64_t n, float* out, uint32_t* flag,
                             Stream stream);
// delta = a - float(m); flags `a` values that are NaN, infinite or beyond ±65504.
Status SubtractHalfOnDevice(const float* a, const uint8_t* m, int64_t n, float* delta,
                            uint32_t* flag, Stream stream);
// m <- fp16(clamp(float(m) + delta, ±65504)); `reconstruction` (nullable, may alias delta)
// receives float(new m); with `reference` non-null, sums Σ(reference - float(new m))², Σreference².
Status AddDeltaToHalfOnDevice(const float* delta, int64_t n, uint8_t* m, float* reconstruction,
                              const float* reference, double* sums, Stream stream);

}  // namespace geotrain::compression::cuda
