// tah's kernels: the vector paths agree bit for bit with the portable scalar paths (so senders
// and receivers built for different CPUs agree), directed fp16 rounding, tile statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "common/half.h"
#include "compression/synthetic_tensors.h"
#include "compression/tah_format.h"
#include "compression/tah_tile_quantizer.h"
#include "compression/tah_tile_stats.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace geotrain::compression {
namespace {

TEST(TahKernels, DirectedHalfRoundingBracketsTheValue) {
  std::vector<float> values = MakeGaussian(20000, 5, 3.0f);
  for (float v : {0.0f, -0.0f, 1e-9f, -1e-9f, 6e-8f, -6e-8f, 65504.0f, -65504.0f, 1.0f, -1.0f, 0.1f,
                  -0.1f, 3.0e-5f, 65500.0f, 1000.3f}) {
    values.push_back(v);
  }
  for (float& v : MakeGaussian(5000, 6, 1e-5f)) values.push_back(v);
  for (float v : values) {
    const uint16_t down = HalfRoundedDown(v), up = HalfRoundedUp(v);
#if defined(__F16C__)
    // The hardware's directed rounding, which ChooseTahScalesF16's vector path relies on.
    EXPECT_EQ(down, _cvtss_sh(v, _MM_FROUND_TO_NEG_INF)) << v;
    EXPECT_EQ(up, _cvtss_sh(v, _MM_FROUND_TO_POS_INF)) << v;
#endif
    EXPECT_LE(HalfToFloat(down), v);
    EXPECT_GE(HalfToFloat(up), v);
    if (HalfToFloat(down) != v) {  // adjacent: no fp16 value strictly between
      EXPECT_LT(HalfToFloat(down), v);
      EXPECT_GT(HalfToFloat(up), v);
      EXPECT_EQ((up & 0x8000) ? up + 1 : up - 1, down) << v;  // one fp16 step apart
    } else {
      EXPECT_EQ(HalfToFloat(up), v);
    }
  }
}

TEST(TahKernels, FastLog2IsCloseToLog2) {
  for (float x : {1e-30f, 1e-5f, 0.3f, 1.0f, 1.5f, 2.0f, 3.999f, 1000.0f, 3e38f}) {
    EXPECT_NEAR(FastLog2(x), std::log2(x), 6.5e-4) << x;
  }
  EXPECT_EQ(0.0f * FastLog2(0.0f), 0.0f);
}

TEST(TahKernels, TileStatsMatchTheScalarPathAndTheDefinitions) {
  for (int g = 8; g <= 1024; g *= 2) {
    std::vector<float> x = MakeActivationLike(4, 2048, g, 5);
    x[3] = -0.0f;
    std::fill(x.begin() + 2048, x.begin() + 2048 + 16, 0.0f);  // an all-zero start of a row
    x[g + 1] = x[g + 2] = 7.0f;                                // a tie for the largest |x|
    const int64_t tiles = static_cast<int64_t>(x.size()) / g;
    TahTileStats fast, scalar;
    ComputeTahTileStats(x.data(), tiles, g, &fast);
    ComputeTahTileStatsScalar(x.data(), tiles, g, &scalar);
    for (auto member :
         {&TahTileStats::min, &TahTileStats::max, &TahTileStats::abs_max, &TahTileStats::abs_second,
          &TahTileStats::abs_sum, &TahTileStats::abs_log_sum}) {
      ASSERT_EQ(0, std::memcmp((fast.*member).data(), (scalar.*member).data(), 4 * tiles)) << g;
    }
    for (int64_t k = 0; k < tiles; ++k) {
      std::vector<float> a;
      double sum = 0, log_sum = 0;
      for (int i = 0; i < g; ++i) {
        a.push_back(std::fabs(x[k * g + i]));
        sum += a.back();
        if (a.back() > 0) log_sum += a.back() * std::log2(a.back());
      }
      std::sort(a.rbegin(), a.rend());
      ASSERT_EQ(fast.abs_max[k], a[0]);
      ASSERT_EQ(fast.abs_second[k], a[1]);
      ASSERT_EQ(fast.min[k], *std::min_element(x.begin() + k * g, x.begin() + (k + 1) * g) + 0.0f);
      ASSERT_NEAR(fast.abs_sum[k], sum, 1e-5 * sum);
      ASSERT_NEAR(fast.abs_log_sum[k], log_sum, 1e-3 * sum + 1e-5 * std::fabs(log_sum));
    }
  }
}

TEST(TahKernels, PivotSearchFindsTheFirstLargest) {
  std::vector<float> x(64, 1.0f);
  x[13] = -5.0f;
  x[40] = 5.0f;
  EXPECT_EQ(TahFirstIndexOfAbs(x.data(), 64, 5.0f), 13);
  EXPECT_EQ(TahFirstIndexOfAbs(x.data(), 64, 1.0f), 0);
  EXPECT_EQ(TahFirstIndexOfAbs(x.data() + 16, 48, 5.0f), 24);
}

TEST(TahKernels, EntropyOfEqualValuesIsLog2OfTheirCount) {
  EXPECT_NEAR(TahUnitEntropy(8 * 0.5, 8 * 0.5 * std::log2(0.5)), 3.0, 2e-3);
  EXPECT_EQ(TahUnitEntropy(0, 0), 0.0f);
  EXPECT_EQ(TahUnitEntropy(std::numeric_limits<double>::infinity(), 1), 0.0f);
}

TEST(TahKernels, TileEntropiesMatchTheScalarPath) {
  const int64_t tiles = 203;
  TahTileStats s;
  s.abs_sum = MakeGaussian(tiles, 12, 40.0f);
  s.abs_log_sum = MakeGaussian(tiles, 13, 100.0f);
  for (float& v : s.abs_sum) v = std::fabs(v);
  s.abs_sum[0] = 0.0f;
  s.abs_sum[9] = std::numeric_limits<float>::infinity();
  s.abs_log_sum[17] = NAN;
  s.abs_sum[30] = 1e-38f;  // L/S overflows
  s.abs_log_sum[30] = 1000.0f;
  std::vector<float> fast(tiles), scalar(tiles);
  TahTileEntropies(s, tiles, fast.data());
  TahTileEntropiesScalar(s, tiles, scalar.data());
  EXPECT_EQ(0, std::memcmp(fast.data(), scalar.data(), 4 * tiles));
  EXPECT_EQ(fast[0], 0.0f);
  EXPECT_EQ(fast[9], 0.0f);
  EXPECT_EQ(fast[17], 0.0f);
  EXPECT_EQ(fast[30], 0.0f);
  EXPECT_NEAR(fast[5], std::log2(s.abs_sum[5]) - s.abs_log_sum[5] / s.abs_sum[5], 1e-3);
}

TEST(TahKernels, ScaleBatchMatchesTheScalarPath) {
  const int64_t n = 203;  // vector blocks and a scalar tail
  std::vector<float> lo = MakeGaussian(n, 1, 100.0f), hi(n);
  std::vector<float> width = MakeGaussian(n, 2, 30.0f);
  std::vector<int32_t> bits(n);
  for (int64_t i = 0; i < n; ++i) {
    hi[i] = lo[i] + std::fabs(width[i]) * (i % 7 == 0 ? 0.0f : 1.0f);
    bits[i] = 2 + static_cast<int32_t>(i % 7);
  }
  lo[4] = hi[4] = 0.0f;
  std::vector<uint16_t> wire_fast(2 * n), wire_scalar(2 * n);
  std::vector<TahTileScale> fast(n), scalar(n);
  ChooseTahScalesF16(lo.data(), hi.data(), bits.data(), n,
                     reinterpret_cast<uint8_t*>(wire_fast.data()), fast.data());
  ChooseTahScalesF16Scalar(lo.data(), hi.data(), bits.data(), n,
                           reinterpret_cast<uint8_t*>(wire_scalar.data()), scalar.data());
  EXPECT_EQ(wire_fast, wire_scalar);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(fast[i].zero, scalar[i].zero);
    ASSERT_EQ(fast[i].scale, scalar[i].scale);
    ASSERT_EQ(fast[i].zero, HalfToFloat(wire_fast[2 * i]));
    ASSERT_LE(fast[i].zero, lo[i]);
    // zero + top code reaches the max: nothing clips.
    ASSERT_GE(fast[i].zero + static_cast<double>((1 << bits[i]) - 1) * fast[i].scale, hi[i]) << i;
  }
}

// Quantizes with both paths into buffers that end exactly where the codes end (so the vector
// path must fall back to exact stores there) and checks bytes, decoded values and error sums.
TEST(TahKernels, QuantizeAndDequantizeMatchTheScalarPaths) {
  for (int g = 8; g <= 1024; g *= 2) {
    for (int bits = 2; bits <= 8; ++bits) {
      const std::vector<float> x = MakeGaussian(g, 31 * g + bits, 2.0f);
      const float lo = *std::min_element(x.begin(), x.end());
      const float hi = *std::max_element(x.begin(), x.end());
      const int32_t b = bits;
      uint16_t wire[2];
      TahTileScale scale;
      ChooseTahScalesF16(&lo, &hi, &b, 1, reinterpret_cast<uint8_t*>(wire), &scale);
      const size_t bytes = static_cast<size_t>(g) * bits / 8;
      std::vector<uint8_t> fast(bytes), scalar(bytes);
      double fast_err = 0, fast_norm = 0, scalar_err = 0, scalar_norm = 0;
      TahErrorLanes fast_lanes, scalar_lanes;
      QuantizeTahTile(x.data(), g, bits, scale, fast.data(), bytes, &fast_lanes);
      QuantizeTahTileScalar(x.data(), g, bits, scale, scalar.data(), bytes, &scalar_lanes);
      fast_lanes.MoveTo(&fast_err, &fast_norm);
      scalar_lanes.MoveTo(&scalar_err, &scalar_norm);
      ASSERT_EQ(fast, scalar) << "g=" << g << " bits=" << bits;
      // With room to spill, the vector path writes the same codes.
      std::vector<uint8_t> roomy(bytes + 64, 0xAB);
      QuantizeTahTile(x.data(), g, bits, scale, roomy.data(), roomy.size(), nullptr);
      ASSERT_EQ(0, std::memcmp(roomy.data(), fast.data(), bytes)) << "g=" << g << " bits=" << bits;

      std::vector<float> fast_out(g), scalar_out(g), roomy_out(g);
      DequantizeTahTile(fast.data(), bytes, g, bits, scale, fast_out.data());
      DequantizeTahTileScalar(scalar.data(), bytes, g, bits, scale, scalar_out.data());
      DequantizeTahTile(roomy.data(), roomy.size(), g, bits, scale, roomy_out.data());
      ASSERT_EQ(0, std::memcmp(fast_out.data(), scalar_out.data(), 4 * g)) << g << " " << bits;
      ASSERT_EQ(0, std::memcmp(roomy_out.data(), scalar_out.data(), 4 * g)) << g << " " << bits;
      double err = 0, norm = 0;
      for (int i = 0; i < g; ++i) {
        ASSERT_LE(std::fabs(x[i] - fast_out[i]), scale.scale / 2 * 1.0001f) << i;
        err += (x[i] - fast_out[i]) * static_cast<double>(x[i] - fast_out[i]);
        norm += static_cast<double>(x[i]) * x[i];
      }
      EXPECT_NEAR(fast_err, err, 1e-4 * err + 1e-9);
      EXPECT_NEAR(fast_norm, norm, 1e-5 * norm);
      EXPECT_NEAR(scalar_err, err, 1e-4 * err + 1e-9);
    }
  }
}

TEST(TahKernels, TileRunsDecodeLikeSingleTiles) {
  for (int g : {8, 32, 64}) {
    for (int bits : {3, 4, 8}) {
      const int64_t count = 5;
      const size_t tile_bytes = static_cast<size_t>(g) * bits / 8;
      std::vector<uint8_t> codes(count * tile_bytes);
      for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(i * 31 + bits);
      std::vector<TahTileScale> scales;
      for (int64_t i = 0; i < count; ++i) scales.push_back({-1.0f * i, 0.5f + i});
      std::vector<float> run(count * g), single(count * g);
      DequantizeTahTiles(codes.data(), codes.size(), g, bits, scales.data(), count, run.data());
      for (int64_t i = 0; i < count; ++i) {
        DequantizeTahTileScalar(codes.data() + i * tile_bytes, codes.size() - i * tile_bytes, g,
                                bits, scales[i], single.data() + i * g);
      }
      ASSERT_EQ(0, std::memcmp(run.data(), single.data(), 4 * run.size())) << g << " " << bits;
    }
  }
}

TEST(TahKernels, RotatedTileDecodeMatchesTheScalarPath) {
  for (int g = 8; g <= 1024; g *= 2) {
    for (int bits = 2; bits <= 8; ++bits) {
      const size_t bytes = static_cast<size_t>(g) * bits / 8;
      std::vector<uint8_t> codes(bytes);
      for (size_t i = 0; i < bytes; ++i) codes[i] = static_cast<uint8_t>(i * 97 + g + bits);
      const TahTileScale scale{-1.25f, 0.0625f};
      for (int pivot : {0, 1, g / 2 + 3, g - 1}) {
        std::vector<float> fast(g), scalar(g);
        DecodeRotatedTahTile(codes.data(), bytes, g, bits, scale, pivot, fast.data());
        DecodeRotatedTahTileScalar(codes.data(), bytes, g, bits, scale, pivot, scalar.data());
        ASSERT_EQ(0, std::memcmp(fast.data(), scalar.data(), 4 * g))
            << "g=" << g << " bits=" << bits << " pivot=" << pivot;
      }
    }
  }
}

TEST(TahKernels, CodesArePackedMostSignificantBitFirst) {
  // Values 0, 1, 2, ..., 7 with zero 0 and scale 1 at 3 bits: 000 001 010 011 100 101 110 111.
  std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7};
  uint8_t out[3] = {};
  QuantizeTahTile(x.data(), 8, 3, {0.0f, 1.0f}, out, 3, nullptr);
  EXPECT_EQ(out[0], 0b00000101);
  EXPECT_EQ(out[1], 0b00111001);
  EXPECT_EQ(out[2], 0b01110111);
}

TEST(TahKernels, BitFieldsRoundTripAndCheckPadding) {
  std::vector<uint16_t> values;
  for (int i = 0; i < 37; ++i) values.push_back(static_cast<uint16_t>((i * 331) % 1024));
  std::vector<uint8_t> packed(PackedFieldBytes(values.size(), 10));
  PackFields(values.data(), values.size(), 10, packed.data());
  std::vector<uint16_t> back;
  ASSERT_TRUE(UnpackFields(packed, values.size(), 10, "f", &back).ok());
  EXPECT_EQ(back, values);
  packed.back() |= 1;  // 370 bits: the last byte has 6 padding bits
  EXPECT_FALSE(UnpackFields(packed, values.size(), 10, "f", &back).ok());
  EXPECT_FALSE(UnpackFields(Span<const uint8_t>(packed.data(), packed.size() - 1), values.size(),
                            10, "f", &back)
                   .ok());

  const uint8_t flags[11] = {1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0};
  uint8_t map[2] = {};
  PackBitmap(flags, 11, map);
  EXPECT_EQ(map[0], 0b10011010);
  EXPECT_EQ(map[1], 0b11000000);
  EXPECT_TRUE(CheckBitmap(Span<const uint8_t>(map, 2), 11, 6, "m").ok());
  EXPECT_FALSE(CheckBitmap(Span<const uint8_t>(map, 2), 11, 5, "m").ok());
}

}  // namespace
}  // namespace geotrain::compression
