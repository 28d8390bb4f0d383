#include "compression/synthetic_tensors.h"

#include <cmath>

#include "common/hash_random.h"

namespace geotrain::compression {

std::vector<float> MakeActivationLike(int64_t rows, int64_t cols, uint64_t seed,
                                      int outlier_channels) {
  SplitMix64 rng(seed);
  std::vector<float> channel_offset(cols), channel_gain(cols, 1.0f);
  for (int64_t c = 0; c < cols; ++c) channel_offset[c] = 0.3f * std::sin(0.01f * c);
  for (int k = 0; k < outlier_channels && cols > 0; ++k) {
    channel_gain[rng.Next() % cols] = 20.0f;
  }
  std::vector<float> x(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      x[r * cols + c] = channel_gain[c] * (channel_offset[c] + rng.Normal());
    }
  }
  return x;
}

std::vector<float> MakeGaussian(int64_t count, uint64_t seed, float stddev) {
  SplitMix64 rng(seed);
  std::vector<float> x(count);
  for (auto& v : x) v = stddev * rng.Normal();
  return x;
}

}  // namespace geotrain::compression
