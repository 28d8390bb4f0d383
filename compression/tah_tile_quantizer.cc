#include "compression/tah_tile_quantizer.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "common/half.h"
#include "compression/hadamard.h"
#include "compression/tah_tile_kernels.h"

#if defined(GEOTRAIN_TAH_AVX2) && defined(__F16C__)
#include <immintrin.h>
#define GEOTRAIN_TAH_F16C 1
#endif

namespace geotrain::compression {
namespace {

using tah_internal::kGroup;
using tah_internal::LoadGroupExact;
using tah_internal::MaxCode;
using tah_internal::StoreGroupExact;

// The scalar element step, written to match the vector instructions exactly: min_ps(t, m) is
// "t < m ? t : m"; t is never negative because zero <= every value of the tile and 1/scale >= 0
// (x >= zero implies fl(x - zero) >= 0), and the slack in the scale keeps t <= 2^b - 1 too (the
// clamp guards the packing all the same).
inline float QuantizeValue(float v, float zero, float inv, float max_code) {
  float t = (v - zero) * inv;
  t = t < max_code ? t : max_code;
  return std::nearbyint(t);
}

}  // namespace

uint16_t HalfRoundedDown(float v) {
  uint16_t h = FloatToHalf(v);  // nearest, at most one step from the directed result
  if (HalfToFloat(h) > v) {     // one step toward -inf
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

uint16_t HalfRoundedUp(float v) {
  uint16_t h = FloatToHalf(v);
  if (HalfToFloat(h) < v) {  // one step toward +inf
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

namespace {
constexpr float kStepSlack = 1.0f + 1.0f / (1 << 20);

// ((max - zero)/(2^b - 1))·slack, the same float operations as the vector path.
inline float SlackStep(float zero, float max, int bits) {
  return (max - zero) / MaxCode(bits) * kStepSlack;
}
}  // namespace

void ChooseTahScalesF16Scalar(const float* min, const float* max, const int32_t* bits, int64_t n,
                              uint8_t* wire, TahTileScale* out) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t pair[2];
    pair[0] = HalfRoundedDown(min[i]);
    out[i].zero = HalfToFloat(pair[0]);
    pair[1] = HalfRoundedUp(SlackStep(out[i].zero, max[i], bits[i]));
    out[i].scale = HalfToFloat(pair[1]);
    std::memcpy(wire + 4 * i, pair, 4);
  }
}

void ChooseTahScalesF16(const float* min, const float* max, const int32_t* bits, int64_t n,
                        uint8_t* wire, TahTileScale* out) {
  int64_t i = 0;
#ifdef GEOTRAIN_TAH_F16C
  static_assert(sizeof(TahTileScale) == 8, "TahTileScale is stored as (zero, scale) pairs");
  const __m256i one = _mm256_set1_epi32(1);
  const __m256 slack = _mm256_set1_ps(kStepSlack);
  for (; i + 8 <= n; i += 8) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits + i));
    const __m256 max_code = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_sllv_epi32(one, b), one));
    const __m128i zero_bits = _mm256_cvtps_ph(_mm256_loadu_ps(min + i), _MM_FROUND_TO_NEG_INF);
    const __m256 zero = _mm256_cvtph_ps(zero_bits);
    const __m256 step = _mm256_mul_ps(
        _mm256_div_ps(_mm256_sub_ps(_mm256_loadu_ps(max + i), zero), max_code), slack);
    const __m128i scale_bits = _mm256_cvtps_ph(step, _MM_FROUND_TO_POS_INF);
    const __m256 scale = _mm256_cvtph_ps(scale_bits);
    auto* w = reinterpret_cast<__m128i*>(wire + 4 * i);
    _mm_storeu_si128(w, _mm_unpacklo_epi16(zero_bits, scale_bits));
    _mm_storeu_si128(w + 1, _mm_unpackhi_epi16(zero_bits, scale_bits));
    const __m256 lo = _mm256_unpacklo_ps(zero, scale), hi = _mm256_unpackhi_ps(zero, scale);
    auto* o = reinterpret_cast<float*>(out + i);
    _mm256_storeu_ps(o, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(o + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
  }
#endif
  ChooseTahScalesF16Scalar(min + i, max + i, bits + i, n - i, wire + 4 * i, out + i);
}

TahTileScale ChooseTahTileScaleF32(float min, float max, int bits) {
  TahTileScale s;
  s.zero = min;
  s.scale = SlackStep(min, max, bits);
  // A step below FLT_MIN would make 1/s overflow; a coarser step only costs precision.
  if (s.scale > 0 && s.scale < FLT_MIN) s.scale = FLT_MIN;
  return s;
}

bool TahTileScaleIsSafe(TahTileScale s, int bits, int tile_size, bool rotated) {
  if (!std::isfinite(s.zero) || !std::isfinite(s.scale) || !(s.scale >= 0)) return false;
  const double reach =
      std::fabs(static_cast<double>(s.zero)) + static_cast<double>(MaxCode(bits)) * s.scale;
  return reach * (rotated ? tile_size : 1) < FLT_MAX / 2.0;
}

void TahErrorLanes::MoveTo(double* error_sq, double* norm_sq) {
  for (int l = 0; l < 8; ++l) {
    *error_sq += error[l];
    *norm_sq += norm[l];
    error[l] = norm[l] = 0.0f;
  }
}

void QuantizeTahTileScalar(const float* x, int g, int bits, TahTileScale s, uint8_t* out,
                           size_t writable, TahErrorLanes* error) {
  const float inv = s.scale > 0 ? 1.0f / s.scale : 0.0f;
  const float max_code = MaxCode(bits);
  for (int i = 0; i < g; i += kGroup) {
    uint64_t word = 0;
    for (int l = 0; l < kGroup; ++l) {
      const float v = x[i + l];
      const float q = QuantizeValue(v, s.zero, inv, max_code);
      word = (word << bits) | static_cast<uint32_t>(q);
      if (error) {
        const float d = v - std::fma(q, s.scale, s.zero);
        error->error[l] += d * d;
        error->norm[l] += v * v;
      }
    }
    StoreGroupExact(word, bits, out + static_cast<size_t>(i / kGroup) * bits);
  }
  (void)writable;  // exact stores never spill
}

void QuantizeTahTile(const float* x, int g, int bits, TahTileScale s, uint8_t* out, size_t writable,
                     TahErrorLanes* error) {
#ifdef GEOTRAIN_TAH_AVX2
  tah_internal::QuantizeTahTileAvx2(x, g, bits, s, out, writable, error);
#else
  QuantizeTahTileScalar(x, g, bits, s, out, writable, error);
#endif
}

void DequantizeTahTileScalar(const uint8_t* codes, size_t readable, int g, int bits, TahTileScale s,
                             float* out) {
  const uint32_t mask = (1u << bits) - 1;
  (void)readable;  // exact loads never spill
  for (int i = 0; i < g; i += kGroup) {
    const uint64_t word = LoadGroupExact(codes + static_cast<size_t>(i / kGroup) * bits, bits);
    for (int l = 0; l < kGroup; ++l) {
      const uint32_t c = static_cast<uint32_t>(word >> (bits * (kGroup - 1 - l))) & mask;
      out[i + l] = std::fma(static_cast<float>(c), s.scale, s.zero);
    }
  }
}

void DequantizeTahTile(const uint8_t* codes, size_t readable, int g, int bits, TahTileScale s,
                       float* out) {
#ifdef GEOTRAIN_TAH_AVX2
  tah_internal::DequantizeTahTileAvx2(codes, readable, g, bits, s, out);
#else
  DequantizeTahTileScalar(codes, readable, g, bits, s, out);
#endif
}

void DequantizeTahTiles(const uint8_t* codes, size_t readable, int g, int bits,
                        const TahTileScale* scales, int64_t count, float* out) {
#ifdef GEOTRAIN_TAH_AVX2
  tah_internal::DequantizeTahTilesAvx2(codes, readable, g, bits, scales, count, out);
#else
  const size_t tile_bytes = static_cast<size_t>(g / 8) * bits;
  for (int64_t i = 0; i < count; ++i) {
    DequantizeTahTileScalar(codes + i * tile_bytes, readable - i * tile_bytes, g, bits, scales[i],
                            out + i * g);
  }
#endif
}

void DecodeRotatedTahTileScalar(const uint8_t* codes, size_t readable, int g, int bits,
                                TahTileScale s, int pivot, float* out) {
  DequantizeTahTileScalar(codes, readable, g, bits, s, out);
  OrthonormalHadamardScalar(out, g);
  std::swap(out[0], out[pivot]);
}

void DecodeRotatedTahTile(const uint8_t* codes, size_t readable, int g, int bits, TahTileScale s,
                          int pivot, float* out) {
#ifdef GEOTRAIN_TAH_AVX2
  tah_internal::DecodeRotatedTahTileAvx2(codes, readable, g, bits, s, pivot, out);
#else
  DequantizeTahTile(codes, readable, g, bits, s, out);
  OrthonormalHadamard(out, g);
  std::swap(out[0], out[pivot]);
#endif
}

void TahTileMinMax(const float* x, int g, float* min, float* max) {
  float lo = std::numeric_limits<float>::infinity();
  float hi = -lo;
  int i = 0;
#ifdef GEOTRAIN_TAH_AVX2
  __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  for (; i + kGroup <= g; i += kGroup) {
    const __m256 v = _mm256_loadu_ps(x + i);
    vlo = _mm256_min_ps(vlo, v);
    vhi = _mm256_max_ps(vhi, v);
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, vlo);
  _mm256_store_ps(h, vhi);
  for (int k = 0; k < 8; ++k) {
    lo = std::min(lo, l[k]);
    hi = std::max(hi, h[k]);
  }
#endif
  for (; i < g; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *min = lo + 0.0f;  // min and max are exact in any order but for the sign of zero
  *max = hi + 0.0f;
}

}  // namespace geotrain::compression
