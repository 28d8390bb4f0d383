#include "compression/hadamard.h"

#include <cmath>

#include "compression/hadamard_avx2.h"

#if defined(__AVX2__) && defined(__FMA__)
#define GEOTRAIN_HADAMARD_AVX2 1
#endif

namespace geotrain::compression {
namespace {

// One butterfly stage of span h: (a, b) ← (a + b, a - b) for each pair h apart.
void ButterflyStage(float* x, int64_t n, int64_t h) {
  for (int64_t i = 0; i < n; i += 2 * h) {
    for (int64_t j = i; j < i + h; ++j) {
      const float a = x[j];
      const float b = x[j + h];
      x[j] = a + b;
      x[j + h] = a - b;
    }
  }
}

void Normalize(float* x, int64_t n) {
  const float s = HadamardNormalizer(n);
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

#ifdef GEOTRAIN_HADAMARD_AVX2
template <int kVectors>
inline void HadamardBlock(float* x, float scale) {
  __m256 v[kVectors];
  for (int i = 0; i < kVectors; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
  hadamard_internal::HadamardRegisters<kVectors>(v, scale);
  for (int i = 0; i < kVectors; ++i) _mm256_storeu_ps(x + 8 * i, v[i]);
}

void OrthonormalHadamardAvx2(float* x, int64_t n) {
  const float scale = HadamardNormalizer(n);
  switch (n) {
    case 8:
      return HadamardBlock<1>(x, scale);
    case 16:
      return HadamardBlock<2>(x, scale);
    case 32:
      return HadamardBlock<4>(x, scale);
    case 64:
      return HadamardBlock<8>(x, scale);
    case 128:
      return HadamardBlock<16>(x, scale);
    default:
      break;
  }
  // Larger n: blocks of 128 in registers (times 1, which is exact), then the wider stages.
  for (int64_t i = 0; i < n; i += 128) HadamardBlock<16>(x + i, 1.0f);
  for (int64_t h = 128; h < n; h *= 2) {
    for (int64_t i = 0; i < n; i += 2 * h) {
      for (int64_t j = i; j < i + h; j += 8) {
        const __m256 a = _mm256_loadu_ps(x + j);
        const __m256 b = _mm256_loadu_ps(x + j + h);
        _mm256_storeu_ps(x + j, _mm256_add_ps(a, b));
        _mm256_storeu_ps(x + j + h, _mm256_sub_ps(a, b));
      }
    }
  }
  const __m256 s = _mm256_set1_ps(scale);
  for (int64_t i = 0; i < n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), s));
}
#endif

}  // namespace

float HadamardNormalizer(int64_t n) {
  // Called once per tile: the common sizes come from a table computed once.
  static const auto* const kTable = [] {
    auto* table = new float[32];
    for (int k = 0; k < 32; ++k) {
      table[k] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(int64_t{1} << k)));
    }
    return table;
  }();
  if (n > 0 && (n & (n - 1)) == 0 && n < (int64_t{1} << 32)) return kTable[__builtin_ctzll(n)];
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
}

void OrthonormalHadamardScalar(float* x, int64_t n) {
  for (int64_t h = 1; h < n; h *= 2) ButterflyStage(x, n, h);
  Normalize(x, n);
}

void OrthonormalHadamard(float* x, int64_t n) {
#ifdef GEOTRAIN_HADAMARD_AVX2
  if (n >= 8) {
    OrthonormalHadamardAvx2(x, n);
    return;
  }
#endif
  OrthonormalHadamardScalar(x, n);
}

}  // namespace geotrain::compression
