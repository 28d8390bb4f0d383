// The per-value arithmetic of the fixpoint quantizer (fixpoint_block.h), written once for the CUDA
// kernels and checked against the CPU quantizer on the CPU (tests/compression/cuda_math_test.cc).
//
// Bit-identical results need the same float operations in the same order as the CPU code: a
// product, then a separate sum or rounding. Neither side contracts a*b+c into an FMA: the C++
// code is built with -ffp-contract=off (top CMakeLists.txt), the CUDA target with --fmad=false.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/half.h"
#include "common/hash_random.h"
#include "common/host_device.h"

namespace geotrain::compression::cuda {

// A fixpoint block's geometry as a kernel argument (QuantLayout without its methods).
struct BlockGeometry {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t tile = 64;  // per-tile mode only
  int mode = 0;       // ScaleMode: 0 per channel, 1 per row, 2 per tile
  int64_t tiles_per_row = 1;
};

// Which scale value (row, col) uses.
GEOTRAIN_HOST_DEVICE inline int64_t ScaleIndex(const BlockGeometry& g, int64_t row, int64_t col) {
  switch (g.mode) {
    case 0:
      return col;
    case 1:
      return row;
    default:
      return row * g.tiles_per_row + col / g.tile;
  }
}

// The fp16 scale of a group whose max |x| is `amax`, rounded up so it never clips, as the
// receiver reads it back.
GEOTRAIN_HOST_DEVICE inline float HalfScale(float amax, uint16_t* bits) {
  *bits = FloatToHalfRoundUp(amax);
  return HalfToFloat(*bits);
}

// 2^f / scale and scale / 2^f, as EncodeFixpointBlock computes them (0 multiplier for scale 0).
GEOTRAIN_HOST_DEVICE inline float QuantMultiplier(float scale, int f) {
  return scale > 0 ? static_cast<float>(1 << f) / scale : 0.0f;
}
GEOTRAIN_HOST_DEVICE inline float QuantStep(float scale, int f) {
  return scale / static_cast<float>(1 << f);
}

// The rounded, clamped level of x (in [-2^f, 2^f - 1]); nearest even, or stochastic from the
// counter hash of (seed, stream, index) when `stochastic`.
GEOTRAIN_HOST_DEVICE inline float QuantLevel(float x, float mul, int f, bool stochastic,
                                             uint64_t seed, uint64_t stream, uint64_t index) {
  const float lo = -static_cast<float>(1 << f);
  const float hi = static_cast<float>((1 << f) - 1);
  float v;
  if (stochastic) {
    const float u = UniformFromHash(HashCounter(seed, stream, index));
    v = floorf(x * mul + u);
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
  } else {
    v = x * mul;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    v = rintf(v);  // the default rounding mode: to nearest, ties to even
  }
  return v;
}

GEOTRAIN_HOST_DEVICE inline uint8_t LevelCode(float level, int f) {
  return static_cast<uint8_t>(level + static_cast<float>(1 << f));
}

GEOTRAIN_HOST_DEVICE inline float CodeValue(uint8_t code, float step, int f) {
  return (static_cast<float>(code) - static_cast<float>(1 << f)) * step;
}

// Eight codes of `bits` bits as one big-endian word of 8·bits bits, code 0 in the top bits: the
// MSB-first packing of bitpack.h, whose every group of 8 codes is exactly `bits` bytes.
GEOTRAIN_HOST_DEVICE inline uint64_t PackGroup(const uint8_t* codes, int bits) {
  uint64_t word = 0;
  for (int i = 0; i < 8; ++i) word = (word << bits) | codes[i];
  return word;
}

GEOTRAIN_HOST_DEVICE inline void UnpackGroup(uint64_t word, int bits, uint8_t* codes) {
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  for (int i = 7; i >= 0; --i, word >>= bits) codes[i] = static_cast<uint8_t>(word & mask);
}

}  // namespace geotrain::compression::cuda
