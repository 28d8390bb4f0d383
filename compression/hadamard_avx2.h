// The in-register pieces of the AVX2 Walsh-Hadamard transform (hadamard.h), shared by hadamard.cc
// and tah's fused decode kernel so that both perform exactly the scalar path's arithmetic.
// Only available when the build targets AVX2 and FMA. Thread-safe (pure functions).
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace geotrain::compression::hadamard_internal {

// Stages h = 1, 2, 4 inside one 8-float register. For a lane pair (lo, hi) = (a, b) the scalar
// butterfly gives lo ← a + b, hi ← a - b; here each lane computes fma(own, ±1, partner), which
// rounds once like the add and the subtract (fma(a, 1, b) = a + b, fma(b, -1, a) = a - b).
inline __m256 Hadamard8(__m256 v) {
  const __m256 odd = _mm256_setr_ps(1, -1, 1, -1, 1, -1, 1, -1);
  const __m256 pairs = _mm256_setr_ps(1, 1, -1, -1, 1, 1, -1, -1);
  const __m256 halves = _mm256_setr_ps(1, 1, 1, 1, -1, -1, -1, -1);
  v = _mm256_fmadd_ps(v, odd, _mm256_permute_ps(v, 0xB1));             // swap neighbours
  v = _mm256_fmadd_ps(v, pairs, _mm256_permute_ps(v, 0x4E));           // swap pairs
  return _mm256_fmadd_ps(v, halves, _mm256_permute2f128_ps(v, v, 1));  // swap halves
}

// A block of kVectors·8 values held in `v`: the stages h = 1 .. 4·kVectors in ascending order,
// then the product by `scale`. Stage by stage over the block is the same arithmetic as stage by
// stage over a whole array, since these stages never mix blocks.
template <int kVectors>
inline void HadamardRegisters(__m256* v, float scale) {
  // Fully unrolled so that `v` lives in registers (with loops left in, GCC keeps it in memory).
#pragma GCC unroll 16
  for (int i = 0; i < kVectors; ++i) v[i] = Hadamard8(v[i]);
#pragma GCC unroll 4
  for (int h = 1; h < kVectors; h *= 2) {
#pragma GCC unroll 16
    for (int i = 0; i < kVectors; i += 2 * h) {
#pragma GCC unroll 16
      for (int j = i; j < i + h; ++j) {
        const __m256 a = v[j], b = v[j + h];
        v[j] = _mm256_add_ps(a, b);
        v[j + h] = _mm256_sub_ps(a, b);
      }
    }
  }
  const __m256 s = _mm256_set1_ps(scale);
#pragma GCC unroll 16
  for (int i = 0; i < kVectors; ++i) v[i] = _mm256_mul_ps(v[i], s);
}

}  // namespace geotrain::compression::hadamard_internal

#endif  // __AVX2__ && __FMA__
