// The arithmetic the CUDA fixpoint kernels run (compression/cuda/fixpoint_math.h), driven on the
// CPU in the kernels' order (one group of 8 codes at a time), gives the CPU quantizer's exact
// block bytes and decoded values. The kernels' launch plumbing is checked on a GPU
// (tests/compression/cuda/fixpoint_cuda_test.cc); this pins the bits down where no GPU is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "compression/bitpack.h"
#include "compression/cuda/fixpoint_math.h"
#include "compression/fixpoint_block.h"
#include "compression/synthetic_tensors.h"

namespace geotrain::compression::cuda {
namespace {

BlockGeometry GeometryOf(const QuantLayout& l) {
  return {l.rows, l.cols, l.tile, static_cast<int>(l.mode),
          l.mode == ScaleMode::kPerTile ? l.TilesPerRow() : 1};
}

// The block as the three encode kernels build it (fixpoint_device.cu), run serially.
std::vector<uint8_t> KernelOrderBlock(const std::vector<float>& x, const QuantLayout& l,
                                      const QuantizeOptions& o) {
  const BlockGeometry g = GeometryOf(l);
  const int f = o.bits - 1;
  std::vector<float> amax(l.NumScales(), 0.0f);
  for (int64_t r = 0; r < l.rows; ++r) {
    for (int64_t c = 0; c < l.cols; ++c) {
      float& m = amax[ScaleIndex(g, r, c)];
      m = std::max(m, std::fabs(x[r * l.cols + c]));
    }
  }
  const float largest = amax.empty() ? 0.0f : *std::max_element(amax.begin(), amax.end());
  const bool f32 = !(largest <= 65504.0f);
  std::vector<uint8_t> block{static_cast<uint8_t>(f32 ? 1 : 0)};
  std::vector<float> mul(amax.size()), step(amax.size());
  for (size_t s = 0; s < amax.size(); ++s) {
    float scale = amax[s];
    if (f32) {
      uint8_t b[4];
      std::memcpy(b, &scale, 4);
      block.insert(block.end(), b, b + 4);
    } else {
      uint16_t h;
      scale = HalfScale(scale, &h);
      block.push_back(static_cast<uint8_t>(h));
      block.push_back(static_cast<uint8_t>(h >> 8));
    }
    mul[s] = QuantMultiplier(scale, f);
    step[s] = QuantStep(scale, f);
  }
  const int64_t total = l.rows * l.cols;
  const uint64_t packed_bytes = PackedBytes(total, o.bits);
  const size_t packed_at = block.size();
  block.resize(packed_at + packed_bytes);
  for (int64_t i0 = 0; i0 < total; i0 += 8) {
    uint8_t codes[8] = {};
    for (int k = 0; k < 8 && i0 + k < total; ++k) {
      const int64_t i = i0 + k;
      const int64_t s = ScaleIndex(g, i / l.cols, i % l.cols);
      codes[k] = LevelCode(
          QuantLevel(x[i], mul[s], f, o.rounding == Rounding::kStochastic, o.seed, o.stream, i), f);
    }
    const uint64_t word = PackGroup(codes, o.bits);
    const uint64_t first = static_cast<uint64_t>(i0 / 8) * o.bits;
    for (uint64_t b = 0; b < std::min<uint64_t>(o.bits, packed_bytes - first); ++b) {
      block[packed_at + first + b] = static_cast<uint8_t>(word >> (8 * (o.bits - 1 - b)));
    }
  }
  return block;
}

// The decode kernel's values for a block, run serially.
std::vector<float> KernelOrderDecode(const std::vector<uint8_t>& block, const QuantLayout& l,
                                     int bits) {
  const BlockGeometry g = GeometryOf(l);
  const bool f32 = block[0] == 1;
  const int64_t num_scales = l.NumScales();
  std::vector<float> step(num_scales);
  for (int64_t s = 0; s < num_scales; ++s) {
    float scale;
    if (f32) {
      std::memcpy(&scale, &block[1 + 4 * s], 4);
    } else {
      scale = HalfToFloat(static_cast<uint16_t>(block[1 + 2 * s] | (block[2 + 2 * s] << 8)));
    }
    step[s] = QuantStep(scale, bits - 1);
  }
  const uint8_t* packed = block.data() + 1 + num_scales * (f32 ? 4 : 2);
  const int64_t total = l.rows * l.cols;
  const uint64_t packed_bytes = PackedBytes(total, bits);
  std::vector<float> out(total);
  for (int64_t i0 = 0; i0 < total; i0 += 8) {
    const uint64_t first = static_cast<uint64_t>(i0 / 8) * bits;
    uint64_t word = 0;
    for (int b = 0; b < bits; ++b)
      word = (word << 8) | (first + b < packed_bytes ? packed[first + b] : 0);
    uint8_t codes[8];
    UnpackGroup(word, bits, codes);
    for (int k = 0; k < 8 && i0 + k < total; ++k) {
      const int64_t i = i0 + k;
      out[i] = CodeValue(codes[k], step[ScaleIndex(g, i / l.cols, i % l.cols)], bits - 1);
    }
  }
  return out;
}

struct Case {
  int bits;
  ScaleMode mode;
  Rounding rounding;
  int64_t rows, cols, tile;
  float magnitude;  // multiplies the activation-like values
};

class FixpointKernelMathTest : public ::testing::TestWithParam<Case> {};

TEST_P(FixpointKernelMathTest, KernelOrderGivesTheCpuBlockAndValues) {
  const Case c = GetParam();
  QuantLayout layout{c.rows, c.cols, c.mode, c.tile};
  QuantizeOptions options;
  options.bits = c.bits;
  options.rounding = c.rounding;
  options.seed = 99;
  options.stream = 12345;
  std::vector<float> x = MakeActivationLike(c.rows, c.cols, 7 * c.bits + c.rows);
  for (float& v : x) v *= c.magnitude;
  if (x.size() > 3) {
    x[1] = 0.0f;
    x[2] = -0.0f;
    x[3] = std::numeric_limits<float>::denorm_min();
  }

  std::vector<uint8_t> expected;
  ByteWriter writer(&expected);
  ASSERT_TRUE(EncodeFixpointBlock(x.data(), layout, options, &writer, nullptr, nullptr).ok());
  const std::vector<uint8_t> block = KernelOrderBlock(x, layout, options);
  ASSERT_EQ(block.size(), expected.size());
  EXPECT_TRUE(block == expected);

  std::vector<float> decoded(x.size());
  ByteReader reader(expected);
  ASSERT_TRUE(DecodeFixpointBlock(&reader, layout, c.bits, decoded.data()).ok());
  const std::vector<float> kernel_decoded = KernelOrderDecode(expected, layout, c.bits);
  ASSERT_EQ(kernel_decoded.size(), decoded.size());
  EXPECT_EQ(std::memcmp(kernel_decoded.data(), decoded.data(), 4 * decoded.size()), 0);
}

INSTANTIATE_TEST_SUITE_P(
    EveryBitsAndMode, FixpointKernelMathTest,
    ::testing::Values(Case{8, ScaleMode::kPerChannel, Rounding::kNearest, 64, 256, 64, 1},
                      Case{4, ScaleMode::kPerChannel, Rounding::kNearest, 37, 1000, 64, 1},
                      Case{3, ScaleMode::kPerChannel, Rounding::kStochastic, 29, 77, 64, 1},
                      Case{2, ScaleMode::kPerRow, Rounding::kNearest, 64, 768, 64, 1},
                      Case{5, ScaleMode::kPerRow, Rounding::kStochastic, 33, 129, 64, 1},
                      Case{6, ScaleMode::kPerTile, Rounding::kNearest, 16, 1000, 128, 1},
                      Case{7, ScaleMode::kPerTile, Rounding::kStochastic, 9, 333, 64, 1},
                      Case{1, ScaleMode::kPerChannel, Rounding::kNearest, 8, 24, 64, 1},
                      Case{4, ScaleMode::kPerChannel, Rounding::kNearest, 16, 64, 64, 1e5f},
                      Case{4, ScaleMode::kPerTile, Rounding::kNearest, 16, 64, 8, 1e-6f},
                      Case{8, ScaleMode::kPerRow, Rounding::kStochastic, 1, 1, 64, 1}));

}  // namespace
}  // namespace geotrain::compression::cuda
