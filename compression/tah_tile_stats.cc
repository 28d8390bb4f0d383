#include "compression/tah_tile_stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GEOTRAIN_TAH_STATS_AVX2 1
#endif

namespace geotrain::compression {
namespace {

// Minimax cubic for log2(m), m in [1, 2): error at most 6.4e-4, equal at both ends so the
// approximation stays continuous across powers of two.
constexpr float kLog2C0 = -2.15362071f;
constexpr float kLog2C1 = 3.04788415f;
constexpr float kLog2C2 = -1.05187502f;
constexpr float kLog2C3 = 0.158248703f;

constexpr int kLanes = 8;

// The lane reduction tree both paths share: (i, i+4), then (i, i+2), then (0, 1).
float SumLanes(const float* lane) {
  float quad[4], pair[2];
  for (int i = 0; i < 4; ++i) quad[i] = lane[i] + lane[i + 4];
  for (int i = 0; i < 2; ++i) pair[i] = quad[i] + quad[i + 2];
  return pair[0] + pair[1];
}

void ResizeStats(int64_t tiles, TahTileStats* s) {
  for (auto* v : {&s->min, &s->max, &s->abs_max, &s->abs_second, &s->abs_sum, &s->abs_log_sum}) {
    v->resize(tiles);
  }
}

#ifdef GEOTRAIN_TAH_STATS_AVX2
constexpr int64_t kPrefetchAhead = 1024;  // floats

inline __m256 FastLog2Avx2(__m256 a) {
  const __m256i bits = _mm256_castps_si256(a);
  const __m256 e =
      _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127)));
  const __m256 m = _mm256_castsi256_ps(_mm256_or_si256(
      _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffff)), _mm256_set1_epi32(0x3f800000)));
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kLog2C3), m, _mm256_set1_ps(kLog2C2));
  p = _mm256_fmadd_ps(p, m, _mm256_set1_ps(kLog2C1));
  p = _mm256_fmadd_ps(p, m, _mm256_set1_ps(kLog2C0));
  return _mm256_add_ps(e, p);
}

// SumLanes' tree with shuffles: (i, i+4), (i, i+2), (0, 1).
inline float SumLanesAvx2(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Merges two (largest, second largest) pairs lane by lane; exact in any order.
inline void MergeTop2(__m128 a1, __m128 a2, __m128 b1, __m128 b2, __m128* top1, __m128* top2) {
  *top2 = _mm_max_ps(_mm_min_ps(a1, b1), _mm_max_ps(a2, b2));
  *top1 = _mm_max_ps(a1, b1);
}

inline void Top2Lanes(__m256 first, __m256 second, float* best, float* next) {
  __m128 t1, t2;
  MergeTop2(_mm256_castps256_ps128(first), _mm256_castps256_ps128(second),
            _mm256_extractf128_ps(first, 1), _mm256_extractf128_ps(second, 1), &t1, &t2);
  MergeTop2(t1, t2, _mm_movehl_ps(t1, t1), _mm_movehl_ps(t2, t2), &t1, &t2);
  MergeTop2(t1, t2, _mm_movehdup_ps(t1), _mm_movehdup_ps(t2), &t1, &t2);
  *best = _mm_cvtss_f32(t1);
  *next = _mm_cvtss_f32(t2);
}

// Horizontal min/max are exact in any order.
inline float MinLanes(__m256 v) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_min_ss(m, _mm_movehdup_ps(m)));
}
inline float MaxLanes(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

void ComputeTahTileStatsAvx2(const float* x, int64_t tiles, int g, TahTileStats* s) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t t = 0; t < tiles; ++t) {
    const float* tile = x + t * g;
    // The hardware prefetcher alone leaves this pass waiting on memory; 4 KiB ahead is enough.
    const float* ahead = (t + 1) * g + kPrefetchAhead <= tiles * g ? tile + kPrefetchAhead : tile;
    for (int i = 0; i < g; i += 16) __builtin_prefetch(ahead + i);
    __m256 vmin = _mm256_set1_ps(std::numeric_limits<float>::infinity());
    __m256 vmax = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    __m256 top1 = _mm256_setzero_ps(), top2 = _mm256_setzero_ps();
    __m256 sum = _mm256_setzero_ps(), log_sum = _mm256_setzero_ps();
    for (int i = 0; i < g; i += kLanes) {
      const __m256 v = _mm256_loadu_ps(tile + i);
      vmin = _mm256_min_ps(vmin, v);
      vmax = _mm256_max_ps(vmax, v);
      const __m256 a = _mm256_andnot_ps(sign, v);
      top2 = _mm256_max_ps(top2, _mm256_min_ps(top1, a));
      top1 = _mm256_max_ps(top1, a);
      sum = _mm256_add_ps(sum, a);
      log_sum = _mm256_fmadd_ps(a, FastLog2Avx2(a), log_sum);
    }
    s->min[t] = MinLanes(vmin) + 0.0f;  // + 0 turns -0 into +0: the lane order cannot show
    s->max[t] = MaxLanes(vmax) + 0.0f;
    Top2Lanes(top1, top2, &s->abs_max[t], &s->abs_second[t]);
    s->abs_sum[t] = SumLanesAvx2(sum);
    s->abs_log_sum[t] = SumLanesAvx2(log_sum);
  }
}
#endif

}  // namespace

float FastLog2(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 127);
  const uint32_t mantissa_bits = (bits & 0x7fffffu) | 0x3f800000u;
  float m;
  std::memcpy(&m, &mantissa_bits, 4);
  float p = std::fma(kLog2C3, m, kLog2C2);
  p = std::fma(p, m, kLog2C1);
  p = std::fma(p, m, kLog2C0);
  return e + p;
}

void ComputeTahTileStatsScalar(const float* x, int64_t tiles, int g, TahTileStats* s) {
  ResizeStats(tiles, s);
  for (int64_t t = 0; t < tiles; ++t) {
    const float* tile = x + t * g;
    float lo = std::numeric_limits<float>::infinity();
    float hi = -std::numeric_limits<float>::infinity();
    float top1[kLanes] = {}, top2[kLanes] = {}, sum[kLanes] = {}, log_sum[kLanes] = {};
    for (int i = 0; i < g; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const float v = tile[i + l];
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        const float a = std::fabs(v);
        top2[l] = std::max(top2[l], std::min(top1[l], a));
        top1[l] = std::max(top1[l], a);
        sum[l] += a;
        log_sum[l] = std::fma(a, FastLog2(a), log_sum[l]);
      }
    }
    float best = 0, next = 0;
    for (int l = 0; l < kLanes; ++l) {
      next = std::max(next, std::max(top2[l], std::min(best, top1[l])));
      best = std::max(best, top1[l]);
    }
    s->min[t] = lo + 0.0f;
    s->max[t] = hi + 0.0f;
    s->abs_max[t] = best;
    s->abs_second[t] = next;
    s->abs_sum[t] = SumLanes(sum);
    s->abs_log_sum[t] = SumLanes(log_sum);
  }
}

void ComputeTahTileStats(const float* x, int64_t tiles, int g, TahTileStats* s) {
#ifdef GEOTRAIN_TAH_STATS_AVX2
  ResizeStats(tiles, s);
  ComputeTahTileStatsAvx2(x, tiles, g, s);
#else
  ComputeTahTileStatsScalar(x, tiles, g, s);
#endif
}

int TahFirstIndexOfAbs(const float* x, int g, float abs_value) {
  int i = 0;
#ifdef GEOTRAIN_TAH_STATS_AVX2
  const __m256 sign = _mm256_set1_ps(-0.0f), target = _mm256_set1_ps(abs_value);
  for (; i + kLanes <= g; i += kLanes) {
    const __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i));
    const int hits = _mm256_movemask_ps(_mm256_cmp_ps(a, target, _CMP_EQ_OQ));
    if (hits) return i + __builtin_ctz(static_cast<unsigned>(hits));
  }
#endif
  for (; i < g; ++i) {
    if (std::fabs(x[i]) == abs_value) return i;
  }
  return 0;
}

namespace {
inline float TileEntropy(float sum, float log_sum) {
  const float inf = std::numeric_limits<float>::infinity();
  const float h = FastLog2(sum) - log_sum / sum;
  const bool valid = sum > 0.0f && sum < inf && std::fabs(log_sum) < inf && std::fabs(h) < inf;
  return valid ? h : 0.0f;
}
}  // namespace

void TahTileEntropiesScalar(const TahTileStats& s, int64_t tiles, float* out) {
  for (int64_t k = 0; k < tiles; ++k) out[k] = TileEntropy(s.abs_sum[k], s.abs_log_sum[k]);
}

void TahTileEntropies(const TahTileStats& s, int64_t tiles, float* out) {
  int64_t k = 0;
#ifdef GEOTRAIN_TAH_STATS_AVX2
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (; k + kLanes <= tiles; k += kLanes) {
    const __m256 sum = _mm256_loadu_ps(s.abs_sum.data() + k);
    const __m256 log_sum = _mm256_loadu_ps(s.abs_log_sum.data() + k);
    const __m256 h = _mm256_sub_ps(FastLog2Avx2(sum), _mm256_div_ps(log_sum, sum));
    __m256 valid = _mm256_and_ps(_mm256_cmp_ps(sum, _mm256_setzero_ps(), _CMP_GT_OQ),
                                 _mm256_cmp_ps(sum, inf, _CMP_LT_OQ));
    valid = _mm256_and_ps(valid, _mm256_cmp_ps(_mm256_andnot_ps(sign, log_sum), inf, _CMP_LT_OQ));
    valid = _mm256_and_ps(valid, _mm256_cmp_ps(_mm256_andnot_ps(sign, h), inf, _CMP_LT_OQ));
    _mm256_storeu_ps(out + k, _mm256_and_ps(h, valid));
  }
#endif
  for (; k < tiles; ++k) out[k] = TileEntropy(s.abs_sum[k], s.abs_log_sum[k]);
}

float TahUnitEntropy(double abs_sum, double abs_log_sum) {
  if (!(abs_sum > 0) || !std::isfinite(abs_sum) || !std::isfinite(abs_log_sum)) return 0.0f;
  const float h = FastLog2(static_cast<float>(abs_sum)) - static_cast<float>(abs_log_sum / abs_sum);
  return std::isfinite(h) ? h : 0.0f;
}

}  // namespace geotrain::compression
