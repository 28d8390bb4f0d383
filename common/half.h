// Conversions between float32 and the 16-bit floating formats (IEEE fp16, bfloat16).
//
// Both round to nearest, ties to even, and keep NaN and infinities, so a value converted on the
// sender and on the receiver gives the same bits on every platform (CPU and CUDA alike).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/host_device.h"

namespace geotrain {

GEOTRAIN_HOST_DEVICE inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
GEOTRAIN_HOST_DEVICE inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// float32 -> fp16 bits, round to nearest even (after F. Giesen's public-domain float_to_half).
GEOTRAIN_HOST_DEVICE inline uint16_t FloatToHalf(float value) {
  uint32_t x = FloatBits(value);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint16_t out;
  if (x >= (127u + 16u) << 23) {  // overflow, infinity or NaN
    out = x > (255u << 23) ? 0x7e00 : 0x7c00;
  } else if (x < (113u << 23)) {  // subnormal or zero: let the FPU round
    const uint32_t magic_bits = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    const float sum = BitsToFloat(x) + BitsToFloat(magic_bits);
    out = static_cast<uint16_t>(FloatBits(sum) - magic_bits);
  } else {
    const uint32_t mantissa_odd = (x >> 13) & 1u;
    x += ((15u - 127u) << 23) + 0xfffu;
    x += mantissa_odd;
    out = static_cast<uint16_t>(x >> 13);
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

GEOTRAIN_HOST_DEVICE inline float HalfToFloat(uint16_t h) {
  const uint32_t shifted_exp = 0x7c00u << 13;
  uint32_t bits = (h & 0x7fffu) << 13;
  const uint32_t exp = shifted_exp & bits;
  bits += (127u - 15u) << 23;
  if (exp == shifted_exp) {
    bits += (128u - 16u) << 23;  // infinity or NaN
  } else if (exp == 0) {         // zero or subnormal: renormalise
    bits += 1u << 23;
    bits = FloatBits(BitsToFloat(bits) - BitsToFloat(113u << 23));
  }
  return BitsToFloat(bits | (static_cast<uint32_t>(h & 0x8000u) << 16));
}

// The smallest fp16 value >= `value` for finite non-negative `value` (a scale that never clips).
GEOTRAIN_HOST_DEVICE inline uint16_t FloatToHalfRoundUp(float value) {
  uint16_t h = FloatToHalf(value);
  if (HalfToFloat(h) < value && h < 0x7c00) ++h;
  return h;
}

GEOTRAIN_HOST_DEVICE inline uint16_t FloatToBFloat16(float value) {
  uint32_t x = FloatBits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

GEOTRAIN_HOST_DEVICE inline float BFloat16ToFloat(uint16_t b) {
  return BitsToFloat(static_cast<uint32_t>(b) << 16);
}

// Bulk conversions; vectorised with F16C where the build enables it.
void FloatToHalf(const float* in, uint16_t* out, size_t n);
void HalfToFloat(const uint16_t* in, float* out, size_t n);
void FloatToBFloat16(const float* in, uint16_t* out, size_t n);
void BFloat16ToFloat(const uint16_t* in, float* out, size_t n);

}  // namespace geotrain
