// The arithmetic of the tah (TAH-Quant) codec, written once as GEOTRAIN_HOST_DEVICE functions for
// both codecs: the CUDA kernels (cuda/tah_device.cu) run all of it; the CPU codec calls the scalar
// pieces it shares with them (the outlier test and fp16 reach in tah_codec.cc; the directed fp16
// rounding, zero/scale choice, scale safety and per-value quantize/dequantize of
// tah_tile_quantizer.cc's scalar paths), so those exist once. Where the CPU codec keeps its own
// code (the AVX2 kernels, the lane structure of tah_tile_stats.cc), the functions here copy it, and
// tests/compression/cuda_tah_math_test.cc checks them against it on the CPU (it also runs a host
// model of every kernel built from these pieces and compares its frames with TahCodec's byte for
// byte).
//
// Every function repeats the CPU code's float/double operations in the CPU code's order:
//   - tile statistics in 8 lanes (lane l takes elements l, l + 8, ...), min/max/top-2 by the same
//     comparisons, Σ|x| by float adds and Σ|x|·log2|x| by fma with FastLog2's own cubic (three
//     fmas); the lanes meet in SumLanes' tree (i, i+4), (i, i+2), (0, 1), which is exactly what a
//     shuffle-xor tree over offsets 4, 2, 1 computes at lane 0 (float addition is commutative);
//   - entropies: FastLog2(S) - L/S in float for tiles, the double sums and divisions of
//     TahUnitEntropy for tokens, mapped to the allocator's order-preserving keys;
//   - outlier test and fp16 reach in double, as FindOutliers writes them;
//   - zero/scale: directed fp16 rounding by FloatToHalf plus one step, ((max - zero)/(2^b -
//   1))·slack;
//   - codes: clamp((x - zero)·(1/scale)) rounded half to even; decode fma(code, scale, zero);
//   - Hadamard butterflies (a + b, a - b) stage by stage, then one product by (float)(1/√G).
// No FMA contraction may happen anywhere else: the CPU build is compiled with -ffp-contract=off
// (CMakeLists.txt) and the CUDA target with --fmad=false. Explicit fmas go through TahFma.
//
// Only the C++ standard library and common/: g++ compiles this header without CUDA.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/half.h"
#include "common/host_device.h"

namespace geotrain::compression {

// The codec's constants (tah_tile_stats.cc still holds its own copy of the FastLog2 cubic).
constexpr float kTahHalfMax = 65504.0f;
// Tiles whose largest |x| is above this stay unrotated, so that the Hadamard butterflies (which
// add up to G = 1024 values of up to √G·max|x|) can never overflow float, on either end.
constexpr float kTahMaxRotatedAbs = 1e30f;
// Rounding slack on |rotated value| <= √G·max|x| when deciding whether fp16 scales suffice.
constexpr double kTahRotationSlack = 1.0 + 1e-5;
// Widens a step by 2^-20 to cover the two float roundings of (max - zero)/(2^b - 1), so that
// zero + (2^b - 1)·step reaches max.
constexpr float kTahStepSlack = 1.0f + 1.0f / (1 << 20);
constexpr float kTahLog2C0 = -2.15362071f;
constexpr float kTahLog2C1 = 3.04788415f;
constexpr float kTahLog2C2 = -1.05187502f;
constexpr float kTahLog2C3 = 0.158248703f;

// ---- Scalar helpers with identical results on both sides -----------------------------------

// fma(a, b, c) rounded once (std::fma on the host, the fused instruction on the device).
GEOTRAIN_HOST_DEVICE inline float TahFma(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Round half to even in the default rounding mode (std::nearbyint / cvtps_epi32 on the CPU).
GEOTRAIN_HOST_DEVICE inline float TahRoundEven(float x) {
#ifdef __CUDA_ARCH__
  return rintf(x);
#else
  return std::nearbyint(x);
#endif
}

GEOTRAIN_HOST_DEVICE inline int TahPopcount(uint32_t v) {
#ifdef __CUDA_ARCH__
  return __popc(v);
#else
  return __builtin_popcount(v);
#endif
}

GEOTRAIN_HOST_DEVICE inline float TahAbs(float x) {
  return BitsToFloat(FloatBits(x) & 0x7fffffffu);
}
GEOTRAIN_HOST_DEVICE inline bool TahIsFinite(float x) {
  return (FloatBits(x) & 0x7f800000u) != 0x7f800000u;
}
GEOTRAIN_HOST_DEVICE inline uint64_t TahDoubleBits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
GEOTRAIN_HOST_DEVICE inline bool TahIsFinite(double x) {
  return (TahDoubleBits(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
GEOTRAIN_HOST_DEVICE inline double TahAbs(double x) {
  const uint64_t u = TahDoubleBits(x) & 0x7fffffffffffffffull;
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}
// std::min(a, b) and std::max(a, b), comparison for comparison.
GEOTRAIN_HOST_DEVICE inline float TahMin(float a, float b) { return b < a ? b : a; }
GEOTRAIN_HOST_DEVICE inline float TahMax(float a, float b) { return a < b ? b : a; }

// FastLog2 of tah_tile_stats.cc: exponent bits plus a cubic (three fmas) on the mantissa.
GEOTRAIN_HOST_DEVICE inline float TahFastLog2(float x) {
  const uint32_t bits = FloatBits(x);
  const float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 127);
  const float m = BitsToFloat((bits & 0x7fffffu) | 0x3f800000u);
  float p = TahFma(kTahLog2C3, m, kTahLog2C2);
  p = TahFma(p, m, kTahLog2C1);
  p = TahFma(p, m, kTahLog2C0);
  return e + p;
}

// ---- Pass 1: per-tile statistics --------------------------------------------------------------

// One of the 8 accumulation lanes of ComputeTahTileStats.
struct TahLane {
  float lo, hi, top1, top2, sum, log_sum;
};

GEOTRAIN_HOST_DEVICE inline TahLane TahLaneInit() {
  TahLane s;
  s.lo = BitsToFloat(0x7f800000u);  // +inf
  s.hi = BitsToFloat(0xff800000u);  // -inf
  s.top1 = s.top2 = s.sum = s.log_sum = 0.0f;
  return s;
}

// The scalar path's body for one value of the lane.
GEOTRAIN_HOST_DEVICE inline void TahLaneAdd(TahLane& s, float v) {
  s.lo = TahMin(s.lo, v);
  s.hi = TahMax(s.hi, v);
  const float a = TahAbs(v);
  s.top2 = TahMax(s.top2, TahMin(s.top1, a));
  s.top1 = TahMax(s.top1, a);
  s.sum += a;
  s.log_sum = TahFma(a, TahFastLog2(a), s.log_sum);
}

// Merges lane `b` into lane `a` (`a` the lower lane of the pair, so that a shuffle-xor tree over
// offsets 4, 2, 1 leaves SumLanes' sums at lane 0). min, max and the top two |x| of a multiset
// are exact in any merge order for non-NaN values (NaN input fails the encode anyway).
GEOTRAIN_HOST_DEVICE inline void TahLaneMerge(TahLane& a, const TahLane& b) {
  a.lo = TahMin(a.lo, b.lo);
  a.hi = TahMax(a.hi, b.hi);
  const float second = TahMax(TahMin(a.top1, b.top1), TahMax(a.top2, b.top2));
  a.top1 = TahMax(a.top1, b.top1);
  a.top2 = second;
  a.sum = a.sum + b.sum;
  a.log_sum = a.log_sum + b.log_sum;
}

// What TahTileStats holds for one tile.
struct TahTileStat {
  float min, max, abs_max, abs_second, abs_sum, abs_log_sum;
};

GEOTRAIN_HOST_DEVICE inline TahTileStat TahFinishTile(const TahLane& merged) {
  TahTileStat t;
  t.min = merged.lo + 0.0f;  // + 0 turns -0 into +0, as the CPU does
  t.max = merged.hi + 0.0f;
  t.abs_max = merged.top1;
  t.abs_second = merged.top2;
  t.abs_sum = merged.sum;
  t.abs_log_sum = merged.log_sum;
  return t;
}

// TahTileEntropies' TileEntropy: a tile as a unit.
GEOTRAIN_HOST_DEVICE inline float TahTileEntropy(float sum, float log_sum) {
  const float inf = BitsToFloat(0x7f800000u);
  const float h = TahFastLog2(sum) - log_sum / sum;
  const bool valid = sum > 0.0f && sum < inf && TahAbs(log_sum) < inf && TahAbs(h) < inf;
  return valid ? h : 0.0f;
}

// TahUnitEntropy: a token from its tiles' sums added in double in tile order.
GEOTRAIN_HOST_DEVICE inline float TahTokenEntropy(double abs_sum, double abs_log_sum) {
  if (!(abs_sum > 0) || !TahIsFinite(abs_sum) || !TahIsFinite(abs_log_sum)) return 0.0f;
  const float h =
      TahFastLog2(static_cast<float>(abs_sum)) - static_cast<float>(abs_log_sum / abs_sum);
  return TahIsFinite(h) ? h : 0.0f;
}

// tah_bit_allocation.cc's OrderedKey: unsigned order = entropy order, -0 and +0 alike.
GEOTRAIN_HOST_DEVICE inline uint32_t TahOrderedKey(float entropy) {
  const uint32_t bits = FloatBits(entropy + 0.0f);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// FindOutliers: whether a tile is pivot-swapped and rotated, and whether fp16 covers it.
GEOTRAIN_HOST_DEVICE inline bool TahIsRotated(float top, float second, double tau) {
  return top > 0 && top <= kTahMaxRotatedAbs && top >= tau * static_cast<double>(second);
}
GEOTRAIN_HOST_DEVICE inline bool TahFitsHalf(float top, bool rotated, double sqrt_g) {
  const double reach = rotated ? top * sqrt_g * kTahRotationSlack : top;
  return reach <= kTahHalfMax;
}

// ---- Pass 2: rotation, zero/scale, codes --------------------------------------------------------

// The first index of a tile's values whose |x| is `top`, looking at the 8 values of group `group`
// (tile elements 8·group .. 8·group + 7); `none` when none of them is. The minimum over the
// tile's groups is TahFirstIndexOfAbs (which returns 0 when no value matches).
GEOTRAIN_HOST_DEVICE inline int TahGroupPivot(const float v[8], float top, int group, int none) {
  for (int i = 0; i < 8; ++i) {
    if (TahAbs(v[i]) == top) return 8 * group + i;
  }
  return none;
}

// v[i] for a run-time i without indexing the array (which would spill registers on the device).
GEOTRAIN_HOST_DEVICE inline float TahPick(const float v[8], int i) {
  const bool odd = i & 1, pair = i & 2, half = i & 4;
  const float a0 = odd ? v[1] : v[0], a1 = odd ? v[3] : v[2];
  const float a2 = odd ? v[5] : v[4], a3 = odd ? v[7] : v[6];
  const float b0 = pair ? a1 : a0, b1 = pair ? a3 : a2;
  return half ? b1 : b0;
}

// std::swap(tile[0], tile[pivot]) seen from group `group`, given tile[0] (`v0`) and tile[pivot]
// (`vp`) as they were before the swap.
GEOTRAIN_HOST_DEVICE inline void TahSwapPivot(float v[8], int group, int pivot, float v0,
                                              float vp) {
  if (group == 0) v[0] = vp;
  if (group == (pivot >> 3)) {
    for (int l = 0; l < 8; ++l) v[l] = l == (pivot & 7) ? v0 : v[l];
  }
}

// Butterfly stages h = 1, 2, 4 inside a group of 8 values: (a, b) <- (a + b, a - b).
GEOTRAIN_HOST_DEVICE inline void TahHadamard8(float v[8]) {
  for (int h = 1; h < 8; h *= 2) {
    for (int i = 0; i < 8; i += 2 * h) {
      for (int j = i; j < i + h; ++j) {
        const float a = v[j], b = v[j + h];
        v[j] = a + b;
        v[j + h] = a - b;
      }
    }
  }
}

// Stage h = 8·m between group g and group g ^ m (`other` holds the partner's values): the lower
// group holds a and gets a + b, the upper one holds b and gets a - b.
GEOTRAIN_HOST_DEVICE inline void TahButterflyGroups(float v[8], const float other[8], bool lower) {
  for (int i = 0; i < 8; ++i) v[i] = lower ? v[i] + other[i] : other[i] - v[i];
}

GEOTRAIN_HOST_DEVICE inline void TahScaleGroup(float v[8], float normalizer) {
  for (int i = 0; i < 8; ++i) v[i] *= normalizer;
}

GEOTRAIN_HOST_DEVICE inline void TahGroupMinMax(const float v[8], float* lo, float* hi) {
  float l = v[0], h = v[0];
  for (int i = 1; i < 8; ++i) {
    l = TahMin(l, v[i]);
    h = TahMax(h, v[i]);
  }
  *lo = l;
  *hi = h;
}

GEOTRAIN_HOST_DEVICE inline float TahMaxCode(int bits) {
  return static_cast<float>((1 << bits) - 1);
}

// fp16 bits of v rounded toward -inf / +inf (HalfRoundedDown / HalfRoundedUp of
// tah_tile_quantizer.h): the nearest fp16 is at most one step from the directed result, so one
// step back when it lies on the wrong side of v.
GEOTRAIN_HOST_DEVICE inline uint16_t TahHalfRoundedDown(float v) {
  uint16_t h = FloatToHalf(v);
  if (HalfToFloat(h) > v) {
    if (h == 0x0000) {
      h = 0x8001;
    } else if (h & 0x8000) {
      ++h;
    } else {
      --h;
    }
  }
  return h;
}
GEOTRAIN_HOST_DEVICE inline uint16_t TahHalfRoundedUp(float v) {
  uint16_t h = FloatToHalf(v);
  if (HalfToFloat(h) < v) {
    if (h == 0x8000) {
      h = 0x0001;
    } else if (h & 0x8000) {
      --h;
    } else {
      ++h;
    }
  }
  return h;
}

// A tile's zero point and step (TahTileScale).
struct TahScale {
  float zero, scale;
};

// ((max - zero)/(2^b - 1))·slack: the same float operations as ChooseTahScalesF16's vector path.
GEOTRAIN_HOST_DEVICE inline float TahSlackStep(float zero, float max, int bits) {
  return (max - zero) / TahMaxCode(bits) * kTahStepSlack;
}

// ChooseTahScalesF16Scalar for one tile; `wire` gets the fp16 zero and scale bits.
GEOTRAIN_HOST_DEVICE inline TahScale TahChooseScaleF16(float lo, float hi, int bits,
                                                       uint16_t wire[2]) {
  TahScale s;
  wire[0] = TahHalfRoundedDown(lo);
  s.zero = HalfToFloat(wire[0]);
  wire[1] = TahHalfRoundedUp(TahSlackStep(s.zero, hi, bits));
  s.scale = HalfToFloat(wire[1]);
  return s;
}

// ChooseTahTileScaleF32.
GEOTRAIN_HOST_DEVICE inline TahScale TahChooseScaleF32(float lo, float hi, int bits) {
  TahScale s;
  s.zero = lo;
  s.scale = TahSlackStep(lo, hi, bits);
  // A step below FLT_MIN would make 1/s overflow; a coarser step only costs precision.
  if (s.scale > 0 && s.scale < FLT_MIN) s.scale = FLT_MIN;
  return s;
}

// TahTileScaleIsSafe.
GEOTRAIN_HOST_DEVICE inline bool TahScaleIsSafe(TahScale s, int bits, int tile_size, bool rotated) {
  if (!TahIsFinite(s.zero) || !TahIsFinite(s.scale) || !(s.scale >= 0)) return false;
  const double reach =
      TahAbs(static_cast<double>(s.zero)) + static_cast<double>(TahMaxCode(bits)) * s.scale;
  return reach * (rotated ? tile_size : 1) < FLT_MAX / 2.0;
}

GEOTRAIN_HOST_DEVICE inline float TahInverseScale(float scale) {
  return scale > 0 ? 1.0f / scale : 0.0f;
}

// The code of v as a float in [0, 2^b - 1], written to match the CPU's vector instructions
// exactly: min_ps(t, m) is "t < m ? t : m"; t is never negative because zero <= every value of the
// tile and 1/scale >= 0 (x >= zero implies fl(x - zero) >= 0), and the slack in the scale keeps
// t <= 2^b - 1 too (the clamp guards the packing all the same).
GEOTRAIN_HOST_DEVICE inline float TahQuantize(float v, float zero, float inv, float max_code) {
  float t = (v - zero) * inv;
  t = t < max_code ? t : max_code;
  return TahRoundEven(t);
}

GEOTRAIN_HOST_DEVICE inline float TahDequantize(float code, TahScale s) {
  return TahFma(code, s.scale, s.zero);
}

// Quantizes a group of 8 values into codes and adds their squared error and norm (in double: the
// CPU's float lanes give an EncodeStats value, never frame bytes).
GEOTRAIN_HOST_DEVICE inline void TahQuantizeGroup(const float v[8], TahScale s, int bits,
                                                  uint8_t codes[8], double* error_sq,
                                                  double* norm_sq) {
  const float inv = TahInverseScale(s.scale);
  const float max_code = TahMaxCode(bits);
  for (int i = 0; i < 8; ++i) {
    const float q = TahQuantize(v[i], s.zero, inv, max_code);
    codes[i] = static_cast<uint8_t>(static_cast<uint32_t>(q));
    const float d = v[i] - TahDequantize(q, s);
    *error_sq += static_cast<double>(d) * d;
    *norm_sq += static_cast<double>(v[i]) * v[i];
  }
}

GEOTRAIN_HOST_DEVICE inline void TahDequantizeGroup(const uint8_t codes[8], TahScale s,
                                                    float v[8]) {
  for (int i = 0; i < 8; ++i) v[i] = TahDequantize(static_cast<float>(codes[i]), s);
}

// ---- Payload layout ---------------------------------------------------------------------------

GEOTRAIN_HOST_DEVICE inline bool TahBit(const uint8_t* map, uint64_t i) {
  return (map[i >> 3] >> (7 - (i & 7))) & 1;
}

// Byte `q` of the MSB-first bitmap of n flags (PackBitmap).
GEOTRAIN_HOST_DEVICE inline uint8_t TahBitmapByte(const uint8_t* flags, uint64_t n, uint64_t q) {
  uint32_t byte = 0;
  for (uint64_t i = 0; i < 8 && 8 * q + i < n; ++i) {
    byte |= static_cast<uint32_t>(flags[8 * q + i] != 0) << (7 - i);
  }
  return static_cast<uint8_t>(byte);
}

// How many 1 bits precede bit i of a bitmap, given the exclusive prefix sums of its bytes'
// popcounts.
GEOTRAIN_HOST_DEVICE inline uint64_t TahRank(const uint8_t* map, const uint32_t* byte_prefix,
                                             uint64_t i) {
  const uint32_t before = static_cast<uint32_t>(map[i >> 3]) >> (8 - (i & 7));
  return byte_prefix[i >> 3] + static_cast<uint64_t>(TahPopcount(before));
}

// High-precision tiles before tile k: `unit_rank` high units precede k's unit; in token units
// the high row of k also counts its tiles before k.
GEOTRAIN_HOST_DEVICE inline uint64_t TahHighTilesBefore(bool token, int64_t k,
                                                        int64_t tiles_per_row, uint64_t unit_rank,
                                                        bool unit_high) {
  if (!token) return unit_rank;
  const int64_t in_row = k % tiles_per_row;
  return unit_rank * static_cast<uint64_t>(tiles_per_row) +
         (unit_high ? static_cast<uint64_t>(in_row) : 0);
}

// Where tile k's codes start in the code section: (G/8)·Σ_{j<k} bits_j.
GEOTRAIN_HOST_DEVICE inline uint64_t TahCodeOffset(int64_t k, uint64_t high_before, int tile_size,
                                                   int high_bits, int low_bits) {
  const uint64_t low_before = static_cast<uint64_t>(k) - high_before;
  return static_cast<uint64_t>(tile_size / 8) * (static_cast<uint64_t>(high_bits) * high_before +
                                                 static_cast<uint64_t>(low_bits) * low_before);
}

// Byte `q` of PackFields(values, count, width): bit p of the stream is bit width-1-(p % width)
// of field p / width.
GEOTRAIN_HOST_DEVICE inline uint8_t TahFieldByte(const uint16_t* values, uint64_t count, int width,
                                                 uint64_t q) {
  uint32_t byte = 0;
  for (int b = 0; b < 8; ++b) {
    const uint64_t p = 8 * q + b;
    const uint64_t field = p / width;
    if (field >= count) break;
    const int within = static_cast<int>(p % width);
    byte |= ((static_cast<uint32_t>(values[field]) >> (width - 1 - within)) & 1u) << (7 - b);
  }
  return static_cast<uint8_t>(byte);
}

// Field `index` of a PackFields stream (what UnpackFields gives).
GEOTRAIN_HOST_DEVICE inline int TahReadField(const uint8_t* packed, uint64_t index, int width) {
  int value = 0;
  for (int b = 0; b < width; ++b) {
    const uint64_t p = index * width + b;
    value = (value << 1) | ((packed[p >> 3] >> (7 - (p & 7))) & 1);
  }
  return value;
}

// A group of 8 codes: `bits` bytes, the big-endian 8·bits-bit word of PackGroup.
GEOTRAIN_HOST_DEVICE inline void TahStoreGroup(const uint8_t codes[8], int bits, uint8_t* out) {
  uint64_t word = 0;
  for (int i = 0; i < 8; ++i) word = (word << bits) | codes[i];
  for (int i = 0; i < bits; ++i) out[i] = static_cast<uint8_t>(word >> (8 * (bits - 1 - i)));
}
GEOTRAIN_HOST_DEVICE inline void TahLoadGroup(const uint8_t* in, int bits, uint8_t codes[8]) {
  uint64_t word = 0;
  for (int i = 0; i < bits; ++i) word = (word << 8) | in[i];
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  for (int i = 7; i >= 0; --i, word >>= bits) codes[i] = static_cast<uint8_t>(word & mask);
}

// Tile k's zero/scale from the scale section (fp16 pairs or f32 pairs, little-endian).
GEOTRAIN_HOST_DEVICE inline TahScale TahReadScale(const uint8_t* scales, int64_t k, bool f32) {
  TahScale s;
  if (f32) {
    const uint8_t* p = scales + 8 * k;
    uint32_t z = 0, c = 0;
    for (int b = 0; b < 4; ++b) {
      z |= static_cast<uint32_t>(p[b]) << (8 * b);
      c |= static_cast<uint32_t>(p[4 + b]) << (8 * b);
    }
    s.zero = BitsToFloat(z);
    s.scale = BitsToFloat(c);
  } else {
    const uint8_t* p = scales + 4 * k;
    s.zero = HalfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8)));
    s.scale = HalfToFloat(static_cast<uint16_t>(p[2] | (p[3] << 8)));
  }
  return s;
}

GEOTRAIN_HOST_DEVICE inline void TahWriteScaleF16(const uint16_t wire[2], int64_t k,
                                                  uint8_t* scales) {
  uint8_t* p = scales + 4 * k;
  p[0] = static_cast<uint8_t>(wire[0]);
  p[1] = static_cast<uint8_t>(wire[0] >> 8);
  p[2] = static_cast<uint8_t>(wire[1]);
  p[3] = static_cast<uint8_t>(wire[1] >> 8);
}
GEOTRAIN_HOST_DEVICE inline void TahWriteScaleF32(TahScale s, int64_t k, uint8_t* scales) {
  uint8_t* p = scales + 8 * k;
  const uint32_t z = FloatBits(s.zero), c = FloatBits(s.scale);
  for (int b = 0; b < 4; ++b) {
    p[b] = static_cast<uint8_t>(z >> (8 * b));
    p[4 + b] = static_cast<uint8_t>(c >> (8 * b));
  }
}

}  // namespace geotrain::compression
