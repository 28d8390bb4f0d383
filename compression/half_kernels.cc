#include "compression/half_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/half.h"

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define GEOTRAIN_HALF_KERNELS_AVX2 1
#endif

namespace geotrain::compression {
namespace {

inline uint16_t LoadHalf(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

inline void StoreHalf(uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); }

// Written as (v > lo ? v : lo) and (v < hi ? v : hi): exactly what vmaxps/vminps compute.
inline float ClampToHalfRange(float v) {
  v = v > -kHalfMax ? v : -kHalfMax;
  return v < kHalfMax ? v : kHalfMax;
}

inline bool InHalfRange(float x) { return std::fabs(x) <= kHalfMax; }  // false for NaN

inline void AddError(ErrorSums* error, double err, double norm) {
  if (error) {
    error->error_sq += err;
    error->norm_sq += norm;
  }
}

#ifdef GEOTRAIN_HALF_KERNELS_AVX2

// Squared sums are accumulated in float lanes over chunks of this many values, then in double:
// long float sums would lose the small error terms.
constexpr int64_t kChunk = 2048;

inline double SumLanes(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  double s = 0;
  for (float x : lanes) s += x;
  return s;
}

inline __m256 Abs(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

inline __m256 Clamp(__m256 v) {
  return _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-kHalfMax)), _mm256_set1_ps(kHalfMax));
}

inline __m256 LoadHalf8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Runs `body(i, &err, &norm)` over the vector part of [0, n) in chunks and returns where the
// scalar tail starts.
template <typename Body>
int64_t ForEachVector(int64_t n, ErrorSums* error, Body body) {
  int64_t i = 0;
  double err = 0, norm = 0;
  while (i + 8 <= n) {
    const int64_t end = std::min(n, i + kChunk);
    __m256 verr = _mm256_setzero_ps(), vnorm = _mm256_setzero_ps();
    for (; i + 8 <= end; i += 8) body(i, &verr, &vnorm);
    err += SumLanes(verr);
    norm += SumLanes(vnorm);
  }
  AddError(error, err, norm);
  return i;
}

#endif  // GEOTRAIN_HALF_KERNELS_AVX2

}  // namespace

bool FloatToHalfInRangeScalar(const float* in, int64_t n, uint8_t* out, ErrorSums* error) {
  bool ok = true;
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    ok &= InHalfRange(in[i]);
    const uint16_t h = FloatToHalf(in[i]);
    StoreHalf(out + 2 * i, h);
    const double d = static_cast<double>(in[i]) - HalfToFloat(h);
    err += d * d;
    norm += static_cast<double>(in[i]) * in[i];
  }
  AddError(error, err, norm);
  return ok;
}

bool HalfToFloatFiniteScalar(const uint8_t* in, int64_t n, float* out) {
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = LoadHalf(in + 2 * i);
    ok &= (h & 0x7c00u) != 0x7c00u;
    out[i] = HalfToFloat(h);
  }
  return ok;
}

bool SubtractHalfScalar(const float* a, const uint8_t* m, int64_t n, float* delta) {
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    ok &= InHalfRange(a[i]);
    delta[i] = a[i] - HalfToFloat(LoadHalf(m + 2 * i));
  }
  return ok;
}

void AddDeltaToHalfScalar(const float* delta, int64_t n, uint8_t* m, float* reconstruction,
                          const float* reference, ErrorSums* error) {
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = ClampToHalfRange(HalfToFloat(LoadHalf(m + 2 * i)) + delta[i]);
    const uint16_t h = FloatToHalf(v);
    StoreHalf(m + 2 * i, h);
    const float x = HalfToFloat(h);
    if (reconstruction) reconstruction[i] = x;
    if (reference) {
      const double d = static_cast<double>(reference[i]) - x;
      err += d * d;
      norm += static_cast<double>(reference[i]) * reference[i];
    }
  }
  if (reference) AddError(error, err, norm);
}

bool FloatToHalfInRange(const float* in, int64_t n, uint8_t* out, ErrorSums* error) {
  int64_t i = 0;
  bool ok = true;
#ifdef GEOTRAIN_HALF_KERNELS_AVX2
  __m256 in_range = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  const __m256 limit = _mm256_set1_ps(kHalfMax);
  i = ForEachVector(n, error, [&](int64_t j, __m256* verr, __m256* vnorm) {
    const __m256 x = _mm256_loadu_ps(in + j);
    in_range = _mm256_and_ps(in_range, _mm256_cmp_ps(Abs(x), limit, _CMP_LE_OQ));
    const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * j), h);
    const __m256 d = _mm256_sub_ps(x, _mm256_cvtph_ps(h));
    *verr = _mm256_fmadd_ps(d, d, *verr);
    *vnorm = _mm256_fmadd_ps(x, x, *vnorm);
  });
  ok = _mm256_movemask_ps(in_range) == 0xff;
#endif
  return FloatToHalfInRangeScalar(in + i, n - i, out + 2 * i, error) && ok;
}

bool HalfToFloatFinite(const uint8_t* in, int64_t n, float* out) {
  int64_t i = 0;
  bool ok = true;
#ifdef GEOTRAIN_HALF_KERNELS_AVX2
  const __m128i exponent = _mm_set1_epi16(0x7c00);
  __m128i non_finite = _mm_setzero_si128();
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i));
    non_finite = _mm_or_si128(non_finite, _mm_cmpeq_epi16(_mm_and_si128(h, exponent), exponent));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  ok = _mm_testz_si128(non_finite, non_finite);
#endif
  return HalfToFloatFiniteScalar(in + 2 * i, n - i, out + i) && ok;
}

bool SubtractHalf(const float* a, const uint8_t* m, int64_t n, float* delta) {
  int64_t i = 0;
  bool ok = true;
#ifdef GEOTRAIN_HALF_KERNELS_AVX2
  __m256 in_range = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  const __m256 limit = _mm256_set1_ps(kHalfMax);
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(a + i);
    in_range = _mm256_and_ps(in_range, _mm256_cmp_ps(Abs(x), limit, _CMP_LE_OQ));
    _mm256_storeu_ps(delta + i, _mm256_sub_ps(x, LoadHalf8(m + 2 * i)));
  }
  ok = _mm256_movemask_ps(in_range) == 0xff;
#endif
  return SubtractHalfScalar(a + i, m + 2 * i, n - i, delta + i) && ok;
}

bool SubtractFloat(const float* a, const float* m, int64_t n, float* delta) {
  // A plain loop: the compiler vectorises it (the count, unlike a bool, reduces in lanes), and a
  // float subtraction has one correct result on every path.
  int64_t out_of_range = 0;
  for (int64_t i = 0; i < n; ++i) {
    out_of_range += !InHalfRange(a[i]);
    delta[i] = a[i] - m[i];
  }
  return out_of_range == 0;
}

void AddDeltaToHalf(const float* delta, int64_t n, uint8_t* m, float* reconstruction,
                    const float* reference, ErrorSums* error) {
  int64_t i = 0;
#ifdef GEOTRAIN_HALF_KERNELS_AVX2
  auto update = [&](int64_t j) {
    const __m256 v = Clamp(_mm256_add_ps(LoadHalf8(m + 2 * j), _mm256_loadu_ps(delta + j)));
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(m + 2 * j), h);
    const __m256 x = _mm256_cvtph_ps(h);
    if (reconstruction) _mm256_storeu_ps(reconstruction + j, x);
    return x;
  };
  if (reference) {
    i = ForEachVector(n, error, [&](int64_t j, __m256* verr, __m256* vnorm) {
      const __m256 x = update(j);
      const __m256 r = _mm256_loadu_ps(reference + j);
      const __m256 d = _mm256_sub_ps(r, x);
      *verr = _mm256_fmadd_ps(d, d, *verr);
      *vnorm = _mm256_fmadd_ps(r, r, *vnorm);
    });
  } else {
    for (; i + 8 <= n; i += 8) update(i);
  }
#endif
  AddDeltaToHalfScalar(delta + i, n - i, m + 2 * i, reconstruction ? reconstruction + i : nullptr,
                       reference ? reference + i : nullptr, error);
}

void AddDeltaToFloat(const float* m, const float* delta, int64_t n, float* out,
                     const float* reference, ErrorSums* error) {
  for (int64_t i = 0; i < n; ++i) out[i] = ClampToHalfRange(m[i] + delta[i]);
  if (!reference) return;
  int64_t i = 0;
#ifdef GEOTRAIN_HALF_KERNELS_AVX2
  i = ForEachVector(n, error, [&](int64_t j, __m256* verr, __m256* vnorm) {
    const __m256 r = _mm256_loadu_ps(reference + j);
    const __m256 d = _mm256_sub_ps(r, _mm256_loadu_ps(out + j));
    *verr = _mm256_fmadd_ps(d, d, *verr);
    *vnorm = _mm256_fmadd_ps(r, r, *vnorm);
  });
#endif
  double err = 0, norm = 0;
  for (; i < n; ++i) {
    const double d = static_cast<double>(reference[i]) - out[i];
    err += d * d;
    norm += static_cast<double>(reference[i]) * reference[i];
  }
  AddError(error, err, norm);
}

}  // namespace geotrain::compression
