// PowerSGD low-rank compression (Vogels, Karimireddy, Jaggi, "PowerSGD: Practical Low-Rank
// Gradient Compression for Distributed Optimization", NeurIPS 2019), the method Optimus-CC
// (arXiv 2301.09830) applies to the activation gradients sent backwards between pipeline stages
// and to data-parallel gradients.
//
// A tensor is viewed as a matrix M [n, m] (rows = all but the last dimension). One step with
// rank r (r <= min(n, m)) and a warm-started Q [m, r]:
//     M += E (error feedback);  P = M Q;  orthonormalise P;  Q = Mᵀ P;
//     send P [n, r] and Q [m, r];  the receiver forms M̂ = P Qᵀ;  the sender keeps E = M - M̂
//     and Q for the next step.
// The steps are free functions over plain row-major float buffers so that the data-parallel
// reducer can interleave its all-reduces with them. Per replica, with Q from InitQ(shared seed):
//     M += E;  ComputeP(M, Q, P);  all-reduce(P);  Orthonormalize(P);
//     ComputeQ(M, P, Q);  all-reduce(Q) (mean);  Residual(M, P, Q, E);  Reconstruct(P, Q, M̂).
// Every rank then holds the same P, Q and M̂ and its own E. PowerSgdStep strings the steps
// together for one link (the powersgd codec).
//
// Kernels: P = M Q and Q = Mᵀ P vectorise their inner loop over r and read M once per product
// (row blocks of 4 stay in L1 while every rank chunk is computed); P Qᵀ vectorises over the
// columns of M with r as the reduction. powersgd_kernels.h has the layouts.
//
// Error bounds. After Orthonormalize, P has orthonormal columns, so M̂ = P Pᵀ M is the orthogonal
// projection of M onto span(P):
//   * always ||M - M̂||_F <= ||M||_F (up to float rounding, ~1e-6 relative). Without error
//     feedback M = x and the reported relative error is at most 1; with it M = x + E, and the
//     error reported against x alone may exceed 1 (x̂ also delivers earlier residue);
//   * a matrix of rank <= r is reproduced to float precision in one step (span(M Q) is the whole
//     column space for any Q in general position, e.g. the random initial one);
//   * on i.i.d. Gaussian matrices (no low-rank structure) one step from a fresh Q keeps little:
//     for 256x256 and r = 8 the relative error measured 0.967-0.970 over 20 seeds (the best
//     rank-8 approximation, which ~30 warm-started steps reach, is ~0.942); tests assert < 0.98;
//   * repeated steps on a fixed M without error feedback are subspace iterations: the error
//     falls towards that of the best rank-r approximation, fast where σ_r >> σ_{r+1}.
//
// Orthonormalize uses modified Gram-Schmidt in double, run twice ("twice is enough"), so the
// columns are orthonormal to float precision even when P is ill-conditioned. A column with no
// usable direction left (zero, or within 1e-10 of the span of the columns before it) is replaced
// by the first unit vector e_i (i = c, c+1, ... mod n) with a clear component outside that
// span: deterministic on every rank, and P stays orthonormal, so the bounds above still hold
// and a degenerate step cannot leave a zero column in Q to stall every later step.
//
// Thread-safety: the free functions are stateless and thread-safe; a PowerSgdState belongs to
// one sender and one thread at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "compression/types.h"

namespace geotrain::compression {

// The rank used for an [n, m] matrix: min(rank, n, m).
int64_t EffectiveRank(int64_t rank, int64_t n, int64_t m);

// Q [m, r] = N(0, 1) values from SplitMix64(seed) in row-major order, then orthonormalised:
// the data-parallel ranks' shared Q. Bit-identical across machines running the same build (the
// normal draws go through libm's log and cos; another libm may differ in the last bit, which
// only perturbs the first step's P before its all-reduce).
void InitQ(uint64_t seed, int64_t m, int64_t r, float* q);

// P [n, r] = M [n, m] Q [m, r].
void ComputeP(const float* m_matrix, const float* q, int64_t n, int64_t m, int64_t r, float* p);

// Makes the r columns of P [n, r] orthonormal in place (r <= n; see the header comment).
// Requires finite values.
void Orthonormalize(float* p, int64_t n, int64_t r);

// Q [m, r] = Mᵀ P for M [n, m] and P [n, r].
void ComputeQ(const float* m_matrix, const float* p, int64_t n, int64_t m, int64_t r, float* q);

// out [n, m] = P Qᵀ. The receiver's decode; bit-identical to what PowerSgdStep assumes.
void Reconstruct(const float* p, const float* q, int64_t n, int64_t m, int64_t r, float* out);

// e [n, m] = M - P Qᵀ (the error to keep). `e` may be `m_matrix` (updated in place).
void Residual(const float* m_matrix, const float* p, const float* q, int64_t n, int64_t m,
              int64_t r, float* e);

// What a PowerSGD sender keeps between steps.
//
// Lazy error propagation (Optimus-CC): E holds the part of the last encoded matrix that did not
// reach the receiver and is added to the *next* matrix sent on the same link (micro-batch i + 1,
// or the next iteration's first micro-batch), not re-sent at once. One state per link is exactly
// that: consecutive steps share E.
//
// The state follows the matrix shape: a step with another [n, m] resets both E (to zero; the old
// error cannot be added to a matrix of another shape) and Q (to InitQ). A step with another rank r
// keeps E and re-initialises Q. With error feedback off E is released and the step starts from
// zero when it is turned on again.
struct PowerSgdState {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t rank = 0;
  std::vector<float> q;      // [cols, rank]: the warm start for the next step
  std::vector<float> error;  // [rows, cols] with error feedback, else empty

  void Reset() { *this = PowerSgdState(); }
};

// One sender step on x [n, m]: fills p [n, r] and q [m, r] (r = EffectiveRank) with what the
// receiver needs, updates `state`, and adds Σ(x - P Qᵀ)² and Σx² to `error`.
// Fails with INVALID_ARGUMENT if x holds NaN or infinity (the state is left as it was) or if
// x + E is so large that the products overflow float32 (the state is reset: E itself may be
// what overflowed, and keeping it would fail every later step too).
Status PowerSgdStep(const float* x, int64_t n, int64_t m, int64_t rank, uint64_t seed,
                    bool error_feedback, PowerSgdState* state, std::vector<float>* p,
                    std::vector<float>* q, ErrorSums* error);

}  // namespace geotrain::compression
