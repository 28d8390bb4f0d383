#include "compression/hadamard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "compression/synthetic_tensors.h"

namespace geotrain::compression {
namespace {

// Entry (i, j) of the Sylvester Hadamard matrix: (-1)^popcount(i & j).
double HadamardEntry(int64_t i, int64_t j) { return __builtin_popcountll(i & j) % 2 ? -1.0 : 1.0; }

TEST(Hadamard, MatchesTheNaiveMatrixProduct) {
  for (int64_t n = 1; n <= 1024; n *= 2) {
    const std::vector<float> x = MakeGaussian(n, 100 + n);
    std::vector<float> fast = x;
    OrthonormalHadamard(fast.data(), n);
    double norm = 0;
    for (float v : x) norm += v * v;
    for (int64_t j = 0; j < n; ++j) {
      double naive = 0;  // (x·H)_j = Σ_i x_i H_ij
      for (int64_t i = 0; i < n; ++i) naive += x[i] * HadamardEntry(i, j);
      naive /= std::sqrt(static_cast<double>(n));
      ASSERT_NEAR(fast[j], naive, 1e-5 * std::sqrt(norm)) << "n=" << n << " j=" << j;
    }
  }
}

TEST(Hadamard, IsItsOwnInverseAndKeepsTheNorm) {
  for (int64_t n = 1; n <= 1024; n *= 2) {
    const std::vector<float> x = MakeActivationLike(1, n, 7 + n, 1);
    std::vector<float> y = x;
    OrthonormalHadamard(y.data(), n);
    double nx = 0, ny = 0;
    for (int64_t i = 0; i < n; ++i) {
      nx += x[i] * x[i];
      ny += y[i] * y[i];
    }
    EXPECT_NEAR(ny, nx, 1e-5 * nx) << n;
    OrthonormalHadamard(y.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(y[i], x[i], 1e-5 * std::sqrt(nx)) << n << " " << i;
  }
}

TEST(Hadamard, SpreadsASpikeEvenly) {
  const int64_t n = 64;
  std::vector<float> x(n, 0.0f);
  x[0] = 8.0f;
  OrthonormalHadamard(x.data(), n);
  for (float v : x) EXPECT_FLOAT_EQ(v, 1.0f);  // 8 / √64
}

TEST(Hadamard, VectorPathMatchesScalarPathBitForBit) {
  for (int64_t n = 1; n <= 1024; n *= 2) {
    std::vector<float> a = MakeActivationLike(1, n, 3 * n, 2);
    std::vector<float> b = a;
    OrthonormalHadamard(a.data(), n);
    OrthonormalHadamardScalar(b.data(), n);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), n * sizeof(float))) << n;
  }
}

TEST(Hadamard, NormalizerIsOneOverRootN) {
  for (int64_t n = 1; n <= (int64_t{1} << 20); n *= 2) {
    EXPECT_EQ(HadamardNormalizer(n), static_cast<float>(1.0 / std::sqrt(static_cast<double>(n))));
  }
  EXPECT_EQ(HadamardNormalizer(3), static_cast<float>(1.0 / std::sqrt(3.0)));
}

}  // namespace
}  // namespace geotrain::compression
