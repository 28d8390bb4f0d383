// Seeded synthetic tensors for tests, benchmarks and fuzz corpora.
#pragma once

#include <cstdint>
#include <vector>

namespace geotrain::compression {

// Activation-like values [rows, cols]: mostly N(0, 1), a smooth per-channel offset, and a few
// outlier channels about 20x larger, as transformer activations have.
std::vector<float> MakeActivationLike(int64_t rows, int64_t cols, uint64_t seed,
                                      int outlier_channels = 4);

// Gaussian N(0, stddev^2) values.
std::vector<float> MakeGaussian(int64_t count, uint64_t seed, float stddev = 1.0f);

}  // namespace geotrain::compression
