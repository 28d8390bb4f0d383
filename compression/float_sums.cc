#include "compression/float_sums.h"

#include <cmath>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GEOTRAIN_FLOAT_SUMS_AVX2 1
#endif

namespace geotrain::compression {
namespace {

#ifdef GEOTRAIN_FLOAT_SUMS_AVX2
// Adds the squares of the 8 floats of v into two 4-lane double accumulators.
inline void AccumulateSquares(__m256 v, __m256d* lo, __m256d* hi) {
  const __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
  const __m256d b = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
  *lo = _mm256_fmadd_pd(a, a, *lo);
  *hi = _mm256_fmadd_pd(b, b, *hi);
}

inline double HorizontalSum(__m256d a) {
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, a);
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}
#endif

}  // namespace

double SumSquares(const float* x, int64_t n) {
  int64_t i = 0;
  double sum = 0;
#ifdef GEOTRAIN_FLOAT_SUMS_AVX2
  // Four independent chains hide the FMA latency; the loop stays memory bound.
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  for (; i + 16 <= n; i += 16) {
    AccumulateSquares(_mm256_loadu_ps(x + i), &a0, &a1);
    AccumulateSquares(_mm256_loadu_ps(x + i + 8), &a2, &a3);
  }
  sum = HorizontalSum(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
#endif
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

double SumSquaredDifferences(const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  double sum = 0;
#ifdef GEOTRAIN_FLOAT_SUMS_AVX2
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  for (; i + 16 <= n; i += 16) {
    AccumulateSquares(_mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)), &a0, &a1);
    AccumulateSquares(_mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8)), &a2,
                      &a3);
  }
  sum = HorizontalSum(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
#endif
  for (; i < n; ++i) {
    const float d = a[i] - b[i];
    sum += static_cast<double>(d) * d;
  }
  return sum;
}

int64_t FindNonFinite(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) return i;
  }
  return -1;
}

Status CheckFinite(const float* x, int64_t n, const std::string& field) {
  const int64_t at = FindNonFinite(x, n);
  if (at < 0) return OkStatus();
  return InvalidArgument(field + "[" + std::to_string(at) +
                         "]: " + (std::isnan(x[at]) ? "NaN" : "infinity") + " cannot be encoded");
}

}  // namespace geotrain::compression
