// tah round trips: error bounds for every bit width pair, unit and tile size; bit allocation;
// outlier rotation; size; the inputs Encode must refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "compression/hadamard.h"
#include "compression/synthetic_tensors.h"
#include "compression/tah_bit_allocation.h"
#include "tests/compression/tah_test_util.h"

namespace geotrain::compression {
namespace {

using tah_test::DecodeOrDie;
using tah_test::Encoded;
using tah_test::EncodeOrDie;
using tah_test::ParseTahFrame;
using tah_test::TahConfig;
using tah_test::TahFrame;

// Activation-like rows plus a spike in every fifth tile, so that every setting rotates tiles.
std::vector<float> TestTensor(int64_t rows, int64_t cols, int tile, uint64_t seed) {
  std::vector<float> x = MakeActivationLike(rows, cols, seed, 6);
  for (int64_t k = 0; k < rows * cols / tile; k += 5) x[k * tile + (k * 7) % tile] = 90.0f;
  return x;
}

// The tile as the encoder quantized it: pivot-swapped and rotated if the frame says so.
std::vector<float> QuantizedDomain(const float* tile, int g, const TahFrame& f, int64_t k,
                                   size_t* next_pivot) {
  std::vector<float> v(tile, tile + g);
  if (f.rotated[k]) {
    std::swap(v[0], v[f.pivots[(*next_pivot)++]]);
    OrthonormalHadamard(v.data(), g);
  }
  return v;
}

// Checks every tile against the quantization bound and checks that the bound is not loose:
// the scale is the tile's range over 2^b - 1, up to fp16 rounding of zero and scale.
void ExpectWithinTileBounds(const std::vector<float>& x, const std::vector<float>& xhat,
                            const TahFrame& f) {
  const int g = f.geo.tile_size;
  size_t next_pivot = 0;
  for (int64_t k = 0; k < f.geo.tiles; ++k) {
    const float* t = x.data() + k * g;
    const float* th = xhat.data() + k * g;
    const TahTileScale s = f.scales[k];
    const int bits = f.BitsOfTile(k);
    double err = 0, norm = 0;
    for (int i = 0; i < g; ++i) {
      err += (t[i] - static_cast<double>(th[i])) * (t[i] - th[i]);
      norm += static_cast<double>(t[i]) * t[i];
      if (!f.rotated[k]) {
        ASSERT_LE(std::fabs(t[i] - th[i]), s.scale / 2 * (1 + 1e-3) + 1e-7)
            << "tile " << k << " element " << i;
      }
    }
    // Float rounding of the two rotations adds a little on rotated tiles.
    ASSERT_LE(std::sqrt(err), std::sqrt(g) * s.scale / 2 * (1 + 1e-4) + 1e-5 * std::sqrt(norm))
        << "tile " << k << " rotated " << int(f.rotated[k]) << " bits " << bits;
    const std::vector<float> v = QuantizedDomain(t, g, f, k, &next_pivot);
    const float lo = *std::min_element(v.begin(), v.end());
    const float hi = *std::max_element(v.begin(), v.end());
    const double max_code = (1 << bits) - 1;
    const double tight = (hi - lo + std::fabs(lo) / 1024) / max_code * (1 + 1.0 / 512) + 6e-8;
    ASSERT_LE(s.scale, tight) << "tile " << k;
    ASSERT_LE(s.zero, lo) << "tile " << k;
  }
}

double RelativeError(const std::vector<float>& x, const std::vector<float>& xhat) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (x[i] - static_cast<double>(xhat[i])) * (x[i] - xhat[i]);
    norm += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(err / norm);
}

struct RoundTripCase {
  int high_bits, low_bits, tile;
  EntropyUnit unit;
};

class TahRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(TahRoundTrip, StaysWithinThePerTileBound) {
  const RoundTripCase c = GetParam();
  const int64_t rows = 12, cols = 2048;
  const std::vector<float> x =
      TestTensor(rows, cols, c.tile, c.tile + c.high_bits * 10 + c.low_bits);
  const Encoded e =
      EncodeOrDie(TahConfig(c.tile, c.high_bits, c.low_bits, 0.8, c.unit), x, {3, 4, cols});
  const std::vector<float> xhat = DecodeOrDie(e.frame);
  ASSERT_EQ(xhat.size(), x.size());
  TahFrame f;
  ParseTahFrame(e.frame, &f);
  EXPECT_GT(f.params.outlier_tiles, 0u);
  EXPECT_EQ(f.params.entropy_unit, c.unit);
  ExpectWithinTileBounds(x, xhat, f);
  const double rel = RelativeError(x, xhat);
  EXPECT_NEAR(e.stats.rel_error, rel, 1e-3 * rel + 1e-7);  // rotated tiles measured before decode
}

std::vector<RoundTripCase> AllRoundTripCases() {
  std::vector<RoundTripCase> cases;
  for (EntropyUnit unit : {EntropyUnit::kToken, EntropyUnit::kTile}) {
    for (int high = 2; high <= 8; ++high) {
      for (int low = 2; low <= 8; ++low) cases.push_back({high, low, 64, unit});
    }
    for (int tile = 8; tile <= 1024; tile *= 2) {
      cases.push_back({4, 3, tile, unit});
      cases.push_back({8, 2, tile, unit});
      cases.push_back({7, 5, tile, unit});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(TahAllSettings, TahRoundTrip, ::testing::ValuesIn(AllRoundTripCases()));

TEST(TahCodec, IsMoreThanSevenTimesSmallerThanFloat32OnActivations) {
  const std::vector<float> x = MakeActivationLike(4 * 1024, 1600, 42);
  for (EntropyUnit unit : {EntropyUnit::kToken, EntropyUnit::kTile}) {
    const Encoded e = EncodeOrDie(TahConfig(64, 4, 3, 0.8, unit), x, {4, 1024, 1600});
    const double bits_per_value = 8.0 * e.frame.size() / x.size();
    EXPECT_GT(e.stats.Ratio(), 7.0);
    EXPECT_NEAR(bits_per_value, 4.35, 0.1);
    EXPECT_LT(e.stats.rel_error, 0.1);
  }
}

TEST(TahCodec, ReportsTheErrorOfWhatTheReceiverDecodes) {
  const std::vector<float> x = TestTensor(64, 256, 64, 5);
  const Encoded e = EncodeOrDie(TahConfig(), x, {64, 256});
  const double rel = RelativeError(x, DecodeOrDie(e.frame));
  EXPECT_NEAR(e.stats.rel_error, rel, 1e-4 * rel);
}

TEST(TahBitAllocation, HighUnitCountRoundsHalfAwayFromZero) {
  EXPECT_EQ(HighUnitCount(10, 0.8), 8);
  EXPECT_EQ(HighUnitCount(4096, 0.8), 3277);  // 3276.8
  EXPECT_EQ(HighUnitCount(2, 0.25), 1);       // 0.5
  EXPECT_EQ(HighUnitCount(3, 0.5), 2);        // 1.5
  EXPECT_EQ(HighUnitCount(7, 0.0), 0);
  EXPECT_EQ(HighUnitCount(7, 1.0), 7);
  EXPECT_EQ(HighUnitCount(0, 0.8), 0);
}

TEST(TahBitAllocation, GivesHighBitsToTheHighestEntropyUnits) {
  // Row r has r+1 equal non-zero values and zeros elsewhere: its entropy is log2(r+1).
  const int64_t rows = 40, cols = 64;
  std::vector<float> x(rows * cols, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c <= r; ++c) x[r * cols + (c * 13) % cols] = (r % 2 ? -1.5f : 2.0f);
  }
  for (double ratio : {0.0, 0.1, 0.25, 0.5, 0.8, 0.975, 1.0}) {
    for (EntropyUnit unit : {EntropyUnit::kToken, EntropyUnit::kTile}) {
      const Encoded e = EncodeOrDie(TahConfig(64, 5, 2, ratio, unit), x, {rows, cols});
      TahFrame f;
      ParseTahFrame(e.frame, &f);
      const int64_t high = HighUnitCount(rows, ratio);
      EXPECT_EQ(f.params.high_units, static_cast<uint64_t>(high)) << ratio;
      for (int64_t r = 0; r < rows; ++r) {
        EXPECT_EQ(f.unit_high[r], r >= rows - high ? 1 : 0) << "ratio " << ratio << " row " << r;
      }
      ExpectWithinTileBounds(x, DecodeOrDie(e.frame), f);
    }
  }
}

TEST(TahBitAllocation, BreaksEntropyTiesByIndex) {
  const int64_t rows = 10, cols = 32;
  std::vector<float> row = MakeGaussian(cols, 9);
  std::vector<float> x;
  for (int64_t r = 0; r < rows; ++r) x.insert(x.end(), row.begin(), row.end());
  const Encoded e = EncodeOrDie(TahConfig(32, 4, 3, 0.3), x, {rows, cols});
  TahFrame f;
  ParseTahFrame(e.frame, &f);
  for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(f.unit_high[r], r >= 7 ? 1 : 0) << r;
}

TEST(TahBitAllocation, SelectsLikeASortByEntropyThenIndex) {
  TahBitAllocator allocator;
  for (int64_t units : {1, 2, 3, 17, 1000, 40000}) {
    std::vector<float> entropy = MakeGaussian(units, units, 2.0f);
    for (int64_t u = 0; u < units; u += 3) entropy[u] = std::round(entropy[u]);  // many ties
    if (units > 5) entropy[5] = -0.0f;
    for (double ratio : {0.0, 0.13, 0.5, 0.8, 0.999, 1.0}) {
      std::vector<int64_t> order(units);
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const float ea = entropy[a] + 0.0f, eb = entropy[b] + 0.0f;
        return ea < eb || (ea == eb && a < b);
      });
      const int64_t high = HighUnitCount(units, ratio);
      std::vector<uint8_t> expected(units, 0), got;
      for (int64_t i = units - high; i < units; ++i) expected[order[i]] = 1;
      allocator.Allocate(entropy.data(), units, ratio, &got);
      ASSERT_EQ(got, expected) << units << " units, ratio " << ratio;
    }
  }
}

TEST(TahBitAllocation, TileUnitsCountTilesNotRows) {
  const std::vector<float> x = TestTensor(30, 512, 32, 3);
  const Encoded e = EncodeOrDie(TahConfig(32, 4, 3, 0.8, EntropyUnit::kTile), x, {30, 512});
  TahFrame f;
  ParseTahFrame(e.frame, &f);
  EXPECT_EQ(f.geo.units, 30 * 16);
  EXPECT_EQ(f.params.high_units, static_cast<uint64_t>(std::llround(0.8 * 30 * 16)));
  EXPECT_EQ(std::accumulate(f.unit_high.begin(), f.unit_high.end(), 0), 384);
}

TEST(TahCodec, AllHighAndAllLowRatiosWork) {
  const std::vector<float> x = TestTensor(16, 256, 64, 11);
  for (double ratio : {0.0, 1.0}) {
    const Encoded e = EncodeOrDie(TahConfig(64, 6, 3, ratio), x, {16, 256});
    TahFrame f;
    ParseTahFrame(e.frame, &f);
    EXPECT_EQ(f.params.high_units, ratio == 1.0 ? 16u : 0u);
    const uint64_t code_bytes = f.content.payload.size() - f.codes_at;
    EXPECT_EQ(code_bytes, 16u * 256 * (ratio == 1.0 ? 6 : 3) / 8);
    ExpectWithinTileBounds(x, DecodeOrDie(e.frame), f);
  }
}

// Tiles of small noise with one large spike each.
std::vector<float> SpikyTiles(int64_t tiles, int g, std::vector<int>* spike_at) {
  std::vector<float> x = MakeGaussian(tiles * g, 21, 0.5f);
  for (int64_t k = 0; k < tiles; ++k) {
    const int at = static_cast<int>((k * 37 + 5) % g);
    x[k * g + at] = (k % 2 ? -60.0f : 60.0f);
    spike_at->push_back(at);
  }
  return x;
}

TEST(TahOutliers, SpikedTilesArePivotedAndRotated) {
  const int g = 64;
  std::vector<int> spike_at;
  const std::vector<float> x = SpikyTiles(32, g, &spike_at);
  const Encoded e = EncodeOrDie(TahConfig(g), x, {32, g});
  TahFrame f;
  ParseTahFrame(e.frame, &f);
  ASSERT_EQ(f.params.outlier_tiles, 32u);
  for (int64_t k = 0; k < 32; ++k) {
    EXPECT_TRUE(f.rotated[k]) << k;
    EXPECT_EQ(f.pivots[k], spike_at[k]) << k;
  }
  ExpectWithinTileBounds(x, DecodeOrDie(e.frame), f);
}

TEST(TahOutliers, RotationReducesTheErrorOfSpikedTiles) {
  const int g = 64;
  std::vector<int> spike_at;
  const std::vector<float> x = SpikyTiles(64, g, &spike_at);
  CodecConfig rotate = TahConfig(g, 4, 4, 1.0);
  CodecConfig never = rotate;
  never.outlier_threshold = 1e6;  // no tile has max|x| >= 1e6 · second max|x|
  const Encoded with = EncodeOrDie(rotate, x, {64, g});
  const Encoded without = EncodeOrDie(never, x, {64, g});
  TahFrame f;
  ParseTahFrame(without.frame, &f);
  EXPECT_EQ(f.params.outlier_tiles, 0u);
  const double rel_with = RelativeError(x, DecodeOrDie(with.frame));
  const double rel_without = RelativeError(x, DecodeOrDie(without.frame));
  EXPECT_LT(rel_with, 0.7 * rel_without) << rel_with << " vs " << rel_without;
}

TEST(TahOutliers, ThresholdDecidesWhichTilesRotate) {
  // Tile 0: max/second = 3; tile 1: max/second = 1.5.
  std::vector<float> x(16, 0.1f);
  x[3] = 3.0f;
  x[5] = 1.0f;
  x[8 + 2] = -1.5f;
  x[8 + 6] = 1.0f;
  CodecConfig config = TahConfig(8);
  config.outlier_threshold = 2.0;
  TahFrame f;
  ParseTahFrame(EncodeOrDie(config, x, {2, 8}).frame, &f);
  EXPECT_EQ(f.rotated, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(f.pivots, (std::vector<uint16_t>{3}));
  config.outlier_threshold = 1.5;  // >= threshold rotates
  TahFrame g;
  ParseTahFrame(EncodeOrDie(config, x, {2, 8}).frame, &g);
  EXPECT_EQ(g.rotated, (std::vector<uint8_t>{1, 1}));
  EXPECT_EQ(g.pivots, (std::vector<uint16_t>{3, 2}));
}

TEST(TahCodec, ConstantAndZeroTilesDecodeExactly) {
  std::vector<float> x(4 * 32, 0.0f);
  std::fill(x.begin() + 32, x.begin() + 64, 0.75f);  // fp16-exact constant
  std::fill(x.begin() + 64, x.begin() + 96, -2.5f);
  const Encoded e = EncodeOrDie(TahConfig(32), x, {4, 32});
  EXPECT_EQ(DecodeOrDie(e.frame), x);
  EXPECT_EQ(e.stats.rel_error, 0.0);
}

TEST(TahCodec, ValuesBeyondFp16UseFloat32Scales) {
  std::vector<float> x = TestTensor(8, 128, 32, 4);
  for (float& v : x) v *= 3000.0f;  // up to 270000
  const Encoded e = EncodeOrDie(TahConfig(32), x, {8, 128});
  TahFrame f;
  ParseTahFrame(e.frame, &f);
  EXPECT_TRUE(f.params.f32_scales);
  ExpectWithinTileBounds(x, DecodeOrDie(e.frame), f);
}

TEST(TahCodec, RankOneAndEmptyTensorsWork) {
  const std::vector<float> x = TestTensor(1, 256, 16, 8);
  const Encoded e = EncodeOrDie(TahConfig(16), x, {256});
  TahFrame f;
  ParseTahFrame(e.frame, &f);
  ExpectWithinTileBounds(x, DecodeOrDie(e.frame), f);
  for (Shape shape : {Shape{0, 64}, Shape{3, 0}, Shape{2, 0, 8}}) {
    const Encoded empty = EncodeOrDie(TahConfig(8), {}, shape);
    EXPECT_TRUE(DecodeOrDie(empty.frame).empty());
  }
}

TEST(TahCodec, SettingsMayChangeBetweenFramesOnOneLink) {
  const std::vector<float> x = TestTensor(8, 256, 8, 2);
  auto sender = MakeCodec(TahConfig());
  auto receiver = MakeCodec(TahConfig());
  for (CodecConfig c : {TahConfig(64, 4, 3), TahConfig(8, 2, 2, 0.1, EntropyUnit::kTile),
                        TahConfig(256, 8, 5, 0.5), TahConfig(32, 3, 4, 0.9)}) {
    ASSERT_TRUE((*sender)->Reconfigure(c).ok());
    std::vector<uint8_t> frame;
    ASSERT_TRUE(EncodeFrame(**sender, {x.data(), DType::kFloat32, {8, 256}}, &frame).ok());
    DecodedTensor out;
    ASSERT_TRUE(DecodeFrame(**receiver, frame, {}, &out).ok());
    TahFrame f;
    ParseTahFrame(frame, &f);
    ExpectWithinTileBounds(x, out.values, f);
  }
}

TEST(TahCodec, EncodesHalfPrecisionInput) {
  std::vector<float> x = TestTensor(4, 128, 64, 6);
  std::vector<uint16_t> half(x.size());
  ConvertFromFloat(x.data(), DType::kBFloat16, half.data(), x.size());
  ConvertToFloat(half.data(), DType::kBFloat16, x.data(), x.size());
  auto codec = MakeCodec(TahConfig());
  std::vector<uint8_t> frame;
  ASSERT_TRUE(EncodeFrame(**codec, {half.data(), DType::kBFloat16, {4, 128}}, &frame).ok());
  DecodedTensor out;
  ASSERT_TRUE(DecodeFrame(**codec, frame, {}, &out).ok());
  EXPECT_EQ(out.dtype, DType::kBFloat16);
  TahFrame f;
  ParseTahFrame(frame, &f);
  ExpectWithinTileBounds(x, out.values, f);
}

Status EncodeStatus(const CodecConfig& config, const std::vector<float>& x, Shape shape) {
  auto codec = MakeCodec(config);
  std::vector<uint8_t> frame;
  return EncodeFrame(**codec, {x.data(), DType::kFloat32, shape}, &frame);
}

TEST(TahCodec, RefusesNonFiniteInputNamingTheElement) {
  std::vector<float> x(128, 1.0f);
  x[77] = NAN;
  Status s = EncodeStatus(TahConfig(32), x, {2, 64});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input[77]: NaN"), std::string::npos) << s.ToString();
  x[77] = 1.0f;
  x[3] = -INFINITY;
  s = EncodeStatus(TahConfig(32), x, {2, 64});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input[3]: infinity"), std::string::npos) << s.ToString();
}

TEST(TahCodec, AcceptsHugeFiniteValuesOrRefusesThemClearly) {
  std::vector<float> x(64, 3e38f);  // Σ|x| overflows, the values themselves are fine
  x[1] = -3e38f;
  const Status s = EncodeStatus(TahConfig(64), x, {64});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();  // range overflows float
  EXPECT_NE(s.message().find("float limit"), std::string::npos) << s.ToString();
  std::fill(x.begin(), x.end(), 1e37f);
  x[1] = 5e36f;
  const Encoded e = EncodeOrDie(TahConfig(64), x, {64});
  TahFrame f;
  ParseTahFrame(e.frame, &f);
  ExpectWithinTileBounds(x, DecodeOrDie(e.frame), f);
}

TEST(TahCodec, RefusesALastDimTheTileDoesNotDivide) {
  const std::vector<float> x(2 * 100, 1.0f);
  const Status s = EncodeStatus(TahConfig(64), x, {2, 100});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tile_size: 64 does not divide the last dim 100"), std::string::npos)
      << s.ToString();
  const std::vector<float> scalar = {1.0f};
  EXPECT_EQ(EncodeStatus(TahConfig(8), scalar, {}).code(), StatusCode::kInvalidArgument);
}

TEST(TahCodec, ConfigValidationNamesTheField) {
  CodecConfig c = TahConfig(48);
  EXPECT_EQ(c.Validate().message().rfind("tile_size", 0), 0u) << c.Validate().ToString();
  c = TahConfig(64, 9);
  EXPECT_EQ(c.Validate().message().rfind("high_bits", 0), 0u) << c.Validate().ToString();
}

}  // namespace
}  // namespace geotrain::compression
