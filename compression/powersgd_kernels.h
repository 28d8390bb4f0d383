// The three matrix products of a PowerSGD step, as row-block kernels over plain float buffers
// (AVX2/FMA with a scalar fallback). powersgd.cc drives them; nothing else should need them.
//
// Layouts (row-major): a block of `rows` <= kPowerSgdBlockRows rows of M with row stride `ldm`;
// factor rows padded to `rp` = PaddedRank(r) lanes with zeros (so every vector load is whole);
// Qᵀ stored as [r, mp] with mp = PaddedCols(m), zero beyond column m.
//
// Each kernel computes every output value with the same sequence of operations whatever the
// block position, so sender and receiver (and all data-parallel ranks) get identical bits from
// identical inputs. Stateless; thread-safe.
#pragma once

#include <cstdint>

namespace geotrain::compression {

// Rows of M a kernel call handles at once: 4 rows x 16 lanes of accumulators fill the AVX2
// register file, and 4 rows of a 1600-wide matrix (25 KiB) stay in L1 between the lane chunks.
constexpr int64_t kPowerSgdBlockRows = 4;

inline int64_t PaddedRank(int64_t r) { return (r + 7) / 8 * 8; }
inline int64_t PaddedCols(int64_t m) { return (m + 7) / 8 * 8; }

// p[t][0:rp] = Σ_j M[t][j] qp[j][0:rp] for t < rows (p has row stride rp).
void ProjectRowBlock(const float* m_rows, int64_t ldm, int64_t rows, int64_t cols, const float* qp,
                     int64_t rp, float* p);

// qp[j][0:rp] += Σ_t M[t][j] p[t][0:rp] for j < cols (p has row stride rp).
void AccumulateTransposedRowBlock(const float* m_rows, int64_t ldm, int64_t rows, int64_t cols,
                                  const float* p, int64_t rp, float* qp);

// out[t][0:cols] = Σ_{c<r} p[t][c] qt[c][0:cols] for t < rows (p has row stride rp, qt is
// [r, mp], out has row stride ldo).
void ReconstructRowBlock(const float* p, int64_t rows, int64_t rp, int64_t r, const float* qt,
                         int64_t mp, int64_t cols, float* out, int64_t ldo);

}  // namespace geotrain::compression
