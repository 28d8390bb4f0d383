#include "compression/powersgd.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/hash_random.h"
#include "compression/float_sums.h"
#include "compression/powersgd_kernels.h"

namespace geotrain::compression {
namespace {

// A column whose component outside the earlier columns' span is below this fraction of its norm
// carries no usable direction (double precision leaves ~1e-16 of noise).
constexpr double kDegenerateColumn = 1e-10;

// Rows [n, r] -> rows of stride rp, zero beyond r.
std::vector<float> PadRows(const float* a, int64_t n, int64_t r, int64_t rp) {
  std::vector<float> out(n * rp, 0.0f);
  for (int64_t i = 0; i < n; ++i) std::copy(a + i * r, a + i * r + r, out.data() + i * rp);
  return out;
}

void UnpadRows(const float* a, int64_t n, int64_t r, int64_t rp, float* out) {
  for (int64_t i = 0; i < n; ++i) std::copy(a + i * rp, a + i * rp + r, out + i * r);
}

// Q [m, r] -> Qᵀ [r, mp], zero beyond column m.
std::vector<float> TransposePadded(const float* q, int64_t m, int64_t r, int64_t mp) {
  std::vector<float> qt(r * mp, 0.0f);
  for (int64_t j = 0; j < m; ++j) {
    for (int64_t c = 0; c < r; ++c) qt[c * mp + j] = q[j * r + c];
  }
  return qt;
}

// Eight independent partial sums: the compiler vectorises them (a single running sum would be
// one long dependency chain, as floating-point addition may not be reordered).
double Dot(const double* a, const double* b, int64_t n) {
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) lanes[l] += a[i + l] * b[i + l];
  }
  double s = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
             ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Two passes of modified Gram-Schmidt of v against the orthonormal columns before it; returns
// the norm of what is left.
double OrthogonalizeAgainst(const double* basis, int64_t count, int64_t n, double* v) {
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t b = 0; b < count; ++b) {
      const double* u = basis + b * n;
      const double d = Dot(v, u, n);
      for (int64_t i = 0; i < n; ++i) v[i] -= d * u[i];
    }
  }
  return std::sqrt(Dot(v, v, n));
}

// Column c has no direction of its own: use the unit vector e_i (i = c, c + 1, ... mod n) that
// keeps the most outside the earlier columns, stopping at the first that keeps over half.
// Some e_i always keeps something since c < n.
void ReplaceWithUnitVector(double* columns, int64_t c, int64_t n) {
  double* v = columns + c * n;
  std::vector<double> best;
  double best_norm = -1;
  for (int64_t t = 0; t < n; ++t) {
    std::fill(v, v + n, 0.0);
    v[(c + t) % n] = 1.0;
    const double norm = OrthogonalizeAgainst(columns, c, n, v);
    if (norm > best_norm) {
      best_norm = norm;
      best.assign(v, v + n);
    }
    if (norm > 0.5) break;
  }
  // best_norm > 0 whenever c < n (the precondition r <= n); a zero column otherwise.
  const double scale = best_norm > 0 ? 1.0 / best_norm : 0.0;
  for (int64_t i = 0; i < n; ++i) v[i] = best[i] * scale;
}

// Rows [i0, i0 + rows) of M = x + e formed in `scratch`, or of x itself without error feedback.
// Every pass forms them with the same float additions, so they agree bit for bit.
const float* MatrixRows(const float* x, const float* e, int64_t i0, int64_t rows, int64_t m,
                        float* scratch) {
  const float* xr = x + i0 * m;
  if (e == nullptr) return xr;
  const float* er = e + i0 * m;
  for (int64_t i = 0; i < rows * m; ++i) scratch[i] = xr[i] + er[i];
  return scratch;
}

bool AllFinite(const std::vector<float>& v) { return FindNonFinite(v.data(), v.size()) < 0; }

// Brings `state` to the shape and rank of this step (see PowerSgdState).
void PrepareState(int64_t n, int64_t m, int64_t r, uint64_t seed, bool error_feedback,
                  PowerSgdState* state) {
  if (state->rows != n || state->cols != m) {
    state->Reset();
    state->rows = n;
    state->cols = m;
  }
  if (state->rank != r || static_cast<int64_t>(state->q.size()) != m * r) {
    state->rank = r;
    state->q.resize(m * r);
    InitQ(seed, m, r, state->q.data());
  }
  if (!error_feedback) {
    std::vector<float>().swap(state->error);
  } else if (static_cast<int64_t>(state->error.size()) != n * m) {
    state->error.assign(n * m, 0.0f);
  }
}

}  // namespace

int64_t EffectiveRank(int64_t rank, int64_t n, int64_t m) {
  return std::max<int64_t>(0, std::min({rank, n, m}));
}

void InitQ(uint64_t seed, int64_t m, int64_t r, float* q) {
  SplitMix64 rng(seed);
  for (int64_t i = 0; i < m * r; ++i) q[i] = rng.Normal();
  Orthonormalize(q, m, r);
}

void ComputeP(const float* m_matrix, const float* q, int64_t n, int64_t m, int64_t r, float* p) {
  const int64_t rp = PaddedRank(r);
  const std::vector<float> qp = PadRows(q, m, r, rp);
  std::vector<float> block(kPowerSgdBlockRows * rp);
  for (int64_t i0 = 0; i0 < n; i0 += kPowerSgdBlockRows) {
    const int64_t rows = std::min(kPowerSgdBlockRows, n - i0);
    ProjectRowBlock(m_matrix + i0 * m, m, rows, m, qp.data(), rp, block.data());
    UnpadRows(block.data(), rows, r, rp, p + i0 * r);
  }
}

void Orthonormalize(float* p, int64_t n, int64_t r) {
  // Columns are strided in P: work on a column-major double copy.
  std::vector<double> columns(r * n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < r; ++c) columns[c * n + i] = p[i * r + c];
  }
  for (int64_t c = 0; c < r; ++c) {
    double* v = columns.data() + c * n;
    const double before = std::sqrt(Dot(v, v, n));
    const double after = before > 0 ? OrthogonalizeAgainst(columns.data(), c, n, v) : 0.0;
    if (after > kDegenerateColumn * before) {
      for (int64_t i = 0; i < n; ++i) v[i] /= after;
    } else {
      ReplaceWithUnitVector(columns.data(), c, n);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < r; ++c) p[i * r + c] = static_cast<float>(columns[c * n + i]);
  }
}

void ComputeQ(const float* m_matrix, const float* p, int64_t n, int64_t m, int64_t r, float* q) {
  const int64_t rp = PaddedRank(r);
  const std::vector<float> pp = PadRows(p, n, r, rp);
  std::vector<float> qp(m * rp, 0.0f);
  for (int64_t i0 = 0; i0 < n; i0 += kPowerSgdBlockRows) {
    const int64_t rows = std::min(kPowerSgdBlockRows, n - i0);
    AccumulateTransposedRowBlock(m_matrix + i0 * m, m, rows, m, pp.data() + i0 * rp, rp, qp.data());
  }
  UnpadRows(qp.data(), m, r, rp, q);
}

void Reconstruct(const float* p, const float* q, int64_t n, int64_t m, int64_t r, float* out) {
  const int64_t rp = PaddedRank(r), mp = PaddedCols(m);
  const std::vector<float> pp = PadRows(p, n, r, rp);
  const std::vector<float> qt = TransposePadded(q, m, r, mp);
  for (int64_t i0 = 0; i0 < n; i0 += kPowerSgdBlockRows) {
    const int64_t rows = std::min(kPowerSgdBlockRows, n - i0);
    ReconstructRowBlock(pp.data() + i0 * rp, rows, rp, r, qt.data(), mp, m, out + i0 * m, m);
  }
}

void Residual(const float* m_matrix, const float* p, const float* q, int64_t n, int64_t m,
              int64_t r, float* e) {
  const int64_t rp = PaddedRank(r), mp = PaddedCols(m);
  const std::vector<float> pp = PadRows(p, n, r, rp);
  const std::vector<float> qt = TransposePadded(q, m, r, mp);
  std::vector<float> tile(kPowerSgdBlockRows * m);
  for (int64_t i0 = 0; i0 < n; i0 += kPowerSgdBlockRows) {
    const int64_t rows = std::min(kPowerSgdBlockRows, n - i0);
    ReconstructRowBlock(pp.data() + i0 * rp, rows, rp, r, qt.data(), mp, m, tile.data(), m);
    const float* mr = m_matrix + i0 * m;
    float* er = e + i0 * m;
    for (int64_t i = 0; i < rows * m; ++i) er[i] = mr[i] - tile[i];
  }
}

Status PowerSgdStep(const float* x, int64_t n, int64_t m, int64_t rank, uint64_t seed,
                    bool error_feedback, PowerSgdState* state, std::vector<float>* p,
                    std::vector<float>* q, ErrorSums* error) {
  const int64_t r = EffectiveRank(rank, n, m);
  p->assign(n * r, 0.0f);
  q->assign(m * r, 0.0f);
  if (r == 0) return OkStatus();  // an empty matrix: nothing to send, nothing to keep
  PrepareState(n, m, r, seed, error_feedback, state);
  const int64_t rp = PaddedRank(r), mp = PaddedCols(m);
  const float* e = error_feedback ? state->error.data() : nullptr;
  std::vector<float> scratch(kPowerSgdBlockRows * m);

  // Pass 1: P = M Q, and Σx², whose finiteness is the NaN/inf check. The state is not touched
  // until every check has passed.
  const std::vector<float> q_in = PadRows(state->q.data(), m, r, rp);
  std::vector<float> pp(n * rp);
  double norm_sq = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kPowerSgdBlockRows) {
    const int64_t rows = std::min(kPowerSgdBlockRows, n - i0);
    norm_sq += SumSquares(x + i0 * m, rows * m);
    const float* mr = MatrixRows(x, e, i0, rows, m, scratch.data());
    ProjectRowBlock(mr, m, rows, m, q_in.data(), rp, pp.data() + i0 * rp);
  }
  if (!std::isfinite(norm_sq)) return CheckFinite(x, n * m, "powersgd.input");
  UnpadRows(pp.data(), n, r, rp, p->data());
  if (!AllFinite(*p)) {
    state->Reset();  // E may be what overflowed: never let one step wedge the link
    return InvalidArgument("powersgd.input: values too large, M Q overflows float32");
  }
  Orthonormalize(p->data(), n, r);

  // Pass 2: Q = Mᵀ P with the orthonormal P exactly as sent.
  pp = PadRows(p->data(), n, r, rp);
  std::vector<float> qp(m * rp, 0.0f);
  for (int64_t i0 = 0; i0 < n; i0 += kPowerSgdBlockRows) {
    const int64_t rows = std::min(kPowerSgdBlockRows, n - i0);
    const float* mr = MatrixRows(x, e, i0, rows, m, scratch.data());
    AccumulateTransposedRowBlock(mr, m, rows, m, pp.data() + i0 * rp, rp, qp.data());
  }
  UnpadRows(qp.data(), m, r, rp, q->data());
  if (!AllFinite(*q)) {
    state->Reset();
    return InvalidArgument("powersgd.input: values too large, Mᵀ P overflows float32");
  }

  // Pass 3: x̂ = P Qᵀ as the receiver will compute it; the error of this step, and E = M - x̂.
  const std::vector<float> qt = TransposePadded(q->data(), m, r, mp);
  std::vector<float> tile(kPowerSgdBlockRows * m);
  double error_sq = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kPowerSgdBlockRows) {
    const int64_t rows = std::min(kPowerSgdBlockRows, n - i0);
    ReconstructRowBlock(pp.data() + i0 * rp, rows, rp, r, qt.data(), mp, m, tile.data(), m);
    const float* xr = x + i0 * m;
    error_sq += SumSquaredDifferences(xr, tile.data(), rows * m);
    if (error_feedback) {
      float* er = state->error.data() + i0 * m;
      for (int64_t i = 0; i < rows * m; ++i) er[i] = (xr[i] + er[i]) - tile[i];
    }
  }
  state->q = *q;
  error->error_sq += error_sq;
  error->norm_sq += norm_sq;
  return OkStatus();
}

}  // namespace geotrain::compression
