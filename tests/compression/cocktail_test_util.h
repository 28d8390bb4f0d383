// Helpers shared by the cocktail tests (the CPU codec's, the CUDA one's and its CPU-side math
// test): a config, and test data that exercises the top-k select and its tie rule.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/hash_random.h"
#include "compression/codec_config.h"
#include "compression/synthetic_tensors.h"

namespace geotrain::compression::cocktail_test {

inline CodecConfig CocktailConfig(MaskMode mode, double p, double topk, int q, int group,
                                  bool feedback, Rounding rounding = Rounding::kNearest) {
  CodecConfig c;
  c.codec = CodecId::kCocktail;
  c.mask_mode = mode;
  c.random_ratio = p;
  c.topk_ratio = topk;
  c.quant_bits = q;
  c.quant_group = group;
  c.error_feedback = feedback;
  c.rounding = rounding;
  c.seed = 4242;
  return c;
}

enum class Data { kGaussian, kFewLevels, kSameMagnitude, kZerosAndTiny, kWideRange };

inline std::vector<float> MakeData(Data kind, int64_t n, uint64_t seed) {
  std::vector<float> x = MakeGaussian(n, seed);
  SplitMix64 rng(seed * 31 + 7);
  for (int64_t i = 0; i < n; ++i) {
    switch (kind) {
      case Data::kGaussian:
        break;
      case Data::kFewLevels:
        x[i] = std::round(x[i] * 2.0f) / 2.0f;
        break;  // many ties, zeros
      case Data::kSameMagnitude:
        x[i] = (rng.Next() & 1) ? 0.75f : -0.75f;
        break;
      case Data::kZerosAndTiny: {
        const uint64_t r = rng.Next() % 8;
        x[i] = r < 4 ? (r & 1 ? -0.0f : 0.0f) : r == 4 ? 1e-40f : r == 5 ? -1e-40f : x[i] * 1e-3f;
        break;
      }
      // 2^±40: the CPU quantizer sums x² in float32, which must not overflow.
      case Data::kWideRange:
        x[i] = std::ldexp(x[i], static_cast<int>(rng.Next() % 80) - 40);
        break;
    }
  }
  return x;
}

}  // namespace geotrain::compression::cocktail_test
