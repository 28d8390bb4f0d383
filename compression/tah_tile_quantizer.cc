#include "compression/tah_tile_quantizer.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "compression/hadamard.h"
#include "compression/tah_math.h"
#include "compression/tah_tile_kernels.h"

#if defined(GEOTRAIN_TAH_AVX2) && defined(__F16C__)
#include <immintrin.h>
#define GEOTRAIN_TAH_F16C 1
#endif

namespace geotrain::compression {
namespace {

using tah_internal::kGroup;
using tah_internal::LoadGroupExact;
using tah_internal::StoreGroupExact;

// The scalar paths compute with tah_math.h, shared with the CUDA kernels. Its TahScale is the
// same (zero, scale) pair as TahTileScale; the kernels keep their own plain struct so that
// tah_math.h needs nothing from the CPU codec's headers.
inline TahScale AsMathScale(TahTileScale s) { return TahScale{s.zero, s.scale}; }
inline TahTileScale AsTileScale(TahScale s) {
  TahTileScale t;
  t.zero = s.zero;
  t.scale = s.scale;
  return t;
}

}  // namespace

uint16_t HalfRoundedDown(float v) { return TahHalfRoundedDown(v); }
uint16_t HalfRoundedUp(float v) { return TahHalfRoundedUp(v); }

void ChooseTahScalesF16Scalar(const float* min, const float* max, const int32_t* bits, int64_t n,
                              uint8_t* wire, TahTileScale* out) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t pair[2];
    out[i] = AsTileScale(TahChooseScaleF16(min[i], max[i], bits[i], pair));
    TahWriteScaleF16(pair, i, wire);
  }
}

void ChooseTahScalesF16(const float* min, const float* max, const int32_t* bits, int64_t n,
                        uint8_t* wire, TahTileScale* out) {
  int64_t i = 0;
#ifdef GEOTRAIN_TAH_F16C
  static_assert(sizeof(TahTileScale) == 8, "TahTileScale is stored as (zero, scale) pairs");
  const __m256i one = _mm256_set1_epi32(1);
  const __m256 slack = _mm256_set1_ps(kTahStepSlack);
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
  return AsTileScale(TahChooseScaleF32(min, max, bits));
}

bool TahTileScaleIsSafe(TahTileScale s, int bits, int tile_size, bool rotated) {
  return TahScaleIsSafe(AsMathScale(s), bits, tile_size, rotated);
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
  const TahScale scale = AsMathScale(s);
  const float inv = TahInverseScale(s.scale);
  const float max_code = TahMaxCode(bits);
  for (int i = 0; i < g; i += kGroup) {
    uint64_t word = 0;
    for (int l = 0; l < kGroup; ++l) {
      const float v = x[i + l];
      const float q = TahQuantize(v, s.zero, inv, max_code);
      word = (word << bits) | static_cast<uint32_t>(q);
      if (error) {
        const float d = v - TahDequantize(q, scale);
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
  const TahScale scale = AsMathScale(s);
  const uint32_t mask = (1u << bits) - 1;
  (void)readable;  // exact loads never spill
  for (int i = 0; i < g; i += kGroup) {
    const uint64_t word = LoadGroupExact(codes + static_cast<size_t>(i / kGroup) * bits, bits);
    for (int l = 0; l < kGroup; ++l) {
      const uint32_t c = static_cast<uint32_t>(word >> (bits * (kGroup - 1 - l))) & mask;
      out[i + l] = TahDequantize(static_cast<float>(c), scale);
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
