#include "compression/powersgd_kernels.h"

#include <algorithm>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GEOTRAIN_POWERSGD_AVX2 1
#endif

namespace geotrain::compression {
namespace {

#ifdef GEOTRAIN_POWERSGD_AVX2

// R rows x 16 lanes of accumulators; each Q row loaded once serves all R rows, each broadcast
// of M serves two vectors.
template <int R>
void ProjectAvx2(const float* m_rows, int64_t ldm, int64_t cols, const float* qp, int64_t rp,
                 float* p) {
  int64_t c = 0;
  for (; c + 16 <= rp; c += 16) {
    __m256 lo[R], hi[R];
    for (int t = 0; t < R; ++t) lo[t] = hi[t] = _mm256_setzero_ps();
    const float* q = qp + c;
    for (int64_t j = 0; j < cols; ++j, q += rp) {
      const __m256 q0 = _mm256_loadu_ps(q);
      const __m256 q1 = _mm256_loadu_ps(q + 8);
      for (int t = 0; t < R; ++t) {
        const __m256 b = _mm256_broadcast_ss(m_rows + t * ldm + j);
        lo[t] = _mm256_fmadd_ps(b, q0, lo[t]);
        hi[t] = _mm256_fmadd_ps(b, q1, hi[t]);
      }
    }
    for (int t = 0; t < R; ++t) {
      _mm256_storeu_ps(p + t * rp + c, lo[t]);
      _mm256_storeu_ps(p + t * rp + c + 8, hi[t]);
    }
  }
  if (c < rp) {  // rp is a multiple of 8: one chunk of 8 lanes is left
    __m256 acc[R];
    for (int t = 0; t < R; ++t) acc[t] = _mm256_setzero_ps();
    const float* q = qp + c;
    for (int64_t j = 0; j < cols; ++j, q += rp) {
      const __m256 q0 = _mm256_loadu_ps(q);
      for (int t = 0; t < R; ++t) {
        acc[t] = _mm256_fmadd_ps(_mm256_broadcast_ss(m_rows + t * ldm + j), q0, acc[t]);
      }
    }
    for (int t = 0; t < R; ++t) _mm256_storeu_ps(p + t * rp + c, acc[t]);
  }
}

// Each Q row chunk is loaded, updated by all R rows, and stored once per block; 16 lanes at a
// time halve the loads and stores per FMA against 8.
template <int R>
void AccumulateAvx2(const float* m_rows, int64_t ldm, int64_t cols, const float* p, int64_t rp,
                    float* qp) {
  int64_t c = 0;
  for (; c + 16 <= rp; c += 16) {
    __m256 lo[R], hi[R];
    for (int t = 0; t < R; ++t) {
      lo[t] = _mm256_loadu_ps(p + t * rp + c);
      hi[t] = _mm256_loadu_ps(p + t * rp + c + 8);
    }
    float* q = qp + c;
    for (int64_t j = 0; j < cols; ++j, q += rp) {
      __m256 a0 = _mm256_loadu_ps(q);
      __m256 a1 = _mm256_loadu_ps(q + 8);
      for (int t = 0; t < R; ++t) {
        const __m256 b = _mm256_broadcast_ss(m_rows + t * ldm + j);
        a0 = _mm256_fmadd_ps(b, lo[t], a0);
        a1 = _mm256_fmadd_ps(b, hi[t], a1);
      }
      _mm256_storeu_ps(q, a0);
      _mm256_storeu_ps(q + 8, a1);
    }
  }
  if (c < rp) {  // one chunk of 8 lanes left
    __m256 pv[R];
    for (int t = 0; t < R; ++t) pv[t] = _mm256_loadu_ps(p + t * rp + c);
    float* q = qp + c;
    for (int64_t j = 0; j < cols; ++j, q += rp) {
      __m256 acc = _mm256_loadu_ps(q);
      for (int t = 0; t < R; ++t) {
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(m_rows + t * ldm + j), pv[t], acc);
      }
      _mm256_storeu_ps(q, acc);
    }
  }
}

// R rows x 16 columns of output per pass over the r factor columns.
template <int R>
void ReconstructAvx2(const float* p, int64_t rp, int64_t r, const float* qt, int64_t mp,
                     int64_t cols, float* out, int64_t ldo) {
  int64_t j = 0;
  for (; j + 16 <= cols; j += 16) {
    __m256 lo[R], hi[R];
    for (int t = 0; t < R; ++t) lo[t] = hi[t] = _mm256_setzero_ps();
    for (int64_t c = 0; c < r; ++c) {
      const __m256 q0 = _mm256_loadu_ps(qt + c * mp + j);
      const __m256 q1 = _mm256_loadu_ps(qt + c * mp + j + 8);
      for (int t = 0; t < R; ++t) {
        const __m256 b = _mm256_broadcast_ss(p + t * rp + c);
        lo[t] = _mm256_fmadd_ps(b, q0, lo[t]);
        hi[t] = _mm256_fmadd_ps(b, q1, hi[t]);
      }
    }
    for (int t = 0; t < R; ++t) {
      _mm256_storeu_ps(out + t * ldo + j, lo[t]);
      _mm256_storeu_ps(out + t * ldo + j + 8, hi[t]);
    }
  }
  // Chunks of 8; Qᵀ is zero-padded to mp columns, so the last load stays inside it. The same
  // operations per lane as above, so a value does not depend on which path computed it.
  for (; j < cols; j += 8) {
    __m256 acc[R];
    for (int t = 0; t < R; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t c = 0; c < r; ++c) {
      const __m256 q0 = _mm256_loadu_ps(qt + c * mp + j);
      for (int t = 0; t < R; ++t) {
        acc[t] = _mm256_fmadd_ps(_mm256_broadcast_ss(p + t * rp + c), q0, acc[t]);
      }
    }
    const int64_t width = std::min<int64_t>(8, cols - j);
    for (int t = 0; t < R; ++t) {
      if (width == 8) {
        _mm256_storeu_ps(out + t * ldo + j, acc[t]);
      } else {
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, acc[t]);
        std::copy(lanes, lanes + width, out + t * ldo + j);
      }
    }
  }
}

#else  // portable fallback: same sums in the same order, without FMA

void ProjectScalar(const float* m_rows, int64_t ldm, int64_t rows, int64_t cols, const float* qp,
                   int64_t rp, float* p) {
  for (int64_t t = 0; t < rows; ++t) {
    float* pt = p + t * rp;
    std::fill(pt, pt + rp, 0.0f);
    for (int64_t j = 0; j < cols; ++j) {
      const float b = m_rows[t * ldm + j];
      const float* q = qp + j * rp;
      for (int64_t c = 0; c < rp; ++c) pt[c] += b * q[c];
    }
  }
}

void AccumulateScalar(const float* m_rows, int64_t ldm, int64_t rows, int64_t cols, const float* p,
                      int64_t rp, float* qp) {
  for (int64_t j = 0; j < cols; ++j) {
    float* q = qp + j * rp;
    for (int64_t t = 0; t < rows; ++t) {
      const float b = m_rows[t * ldm + j];
      const float* pt = p + t * rp;
      for (int64_t c = 0; c < rp; ++c) q[c] += b * pt[c];
    }
  }
}

void ReconstructScalar(const float* p, int64_t rows, int64_t rp, int64_t r, const float* qt,
                       int64_t mp, int64_t cols, float* out, int64_t ldo) {
  for (int64_t t = 0; t < rows; ++t) {
    float* o = out + t * ldo;
    std::fill(o, o + cols, 0.0f);
    for (int64_t c = 0; c < r; ++c) {
      const float b = p[t * rp + c];
      const float* q = qt + c * mp;
      for (int64_t j = 0; j < cols; ++j) o[j] += b * q[j];
    }
  }
}

#endif

}  // namespace

void ProjectRowBlock(const float* m_rows, int64_t ldm, int64_t rows, int64_t cols, const float* qp,
                     int64_t rp, float* p) {
#ifdef GEOTRAIN_POWERSGD_AVX2
  switch (rows) {
    case 4:
      return ProjectAvx2<4>(m_rows, ldm, cols, qp, rp, p);
    case 3:
      return ProjectAvx2<3>(m_rows, ldm, cols, qp, rp, p);
    case 2:
      return ProjectAvx2<2>(m_rows, ldm, cols, qp, rp, p);
    case 1:
      return ProjectAvx2<1>(m_rows, ldm, cols, qp, rp, p);
    default:
      return;
  }
#else
  ProjectScalar(m_rows, ldm, rows, cols, qp, rp, p);
#endif
}

void AccumulateTransposedRowBlock(const float* m_rows, int64_t ldm, int64_t rows, int64_t cols,
                                  const float* p, int64_t rp, float* qp) {
#ifdef GEOTRAIN_POWERSGD_AVX2
  switch (rows) {
    case 4:
      return AccumulateAvx2<4>(m_rows, ldm, cols, p, rp, qp);
    case 3:
      return AccumulateAvx2<3>(m_rows, ldm, cols, p, rp, qp);
    case 2:
      return AccumulateAvx2<2>(m_rows, ldm, cols, p, rp, qp);
    case 1:
      return AccumulateAvx2<1>(m_rows, ldm, cols, p, rp, qp);
    default:
      return;
  }
#else
  AccumulateScalar(m_rows, ldm, rows, cols, p, rp, qp);
#endif
}

void ReconstructRowBlock(const float* p, int64_t rows, int64_t rp, int64_t r, const float* qt,
                         int64_t mp, int64_t cols, float* out, int64_t ldo) {
#ifdef GEOTRAIN_POWERSGD_AVX2
  switch (rows) {
    case 4:
      return ReconstructAvx2<4>(p, rp, r, qt, mp, cols, out, ldo);
    case 3:
      return ReconstructAvx2<3>(p, rp, r, qt, mp, cols, out, ldo);
    case 2:
      return ReconstructAvx2<2>(p, rp, r, qt, mp, cols, out, ldo);
    case 1:
      return ReconstructAvx2<1>(p, rp, r, qt, mp, cols, out, ldo);
    default:
      return;
  }
#else
  ReconstructScalar(p, rows, rp, r, qt, mp, cols, out, ldo);
#endif
}

}  // namespace geotrain::compression
