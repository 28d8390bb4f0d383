#include <gtest/gtest.h>

#include <cmath>

#include "common/half.h"
#include "compression/bitpack.h"
#include "compression/codec.h"
#include "compression/fixpoint_block.h"
#include "compression/frame.h"
#include "compression/synthetic_tensors.h"

namespace geotrain::compression {
namespace {

TEST(BitPack, RoundTripsEveryWidthAcrossPieces) {
  for (int bits = 1; bits <= 8; ++bits) {
    std::vector<uint8_t> codes(1003);
    for (size_t i = 0; i < codes.size(); ++i)
      codes[i] = static_cast<uint8_t>((i * 37 + 11) % (1u << bits));
    std::vector<uint8_t> packed(PackedBytes(codes.size(), bits));
    BitPacker packer(packed.data(), bits);
    packer.Append(codes.data(), 7);  // unaligned pieces exercise the general path
    packer.Append(codes.data() + 7, 500);
    packer.Append(codes.data() + 507, codes.size() - 507);
    std::vector<uint8_t> back(codes.size());
    BitUnpacker unpacker(packed.data(), bits);
    unpacker.Read(back.data(), 3);
    unpacker.Read(back.data() + 3, codes.size() - 3);
    EXPECT_EQ(back, codes) << "bits=" << bits;
  }
}

TEST(BitPack, IsMostSignificantBitFirst) {
  const uint8_t codes[] = {0x1, 0x2, 0x3, 0x0};
  uint8_t packed[1] = {0};
  BitPacker(packed, 2).Append(codes, 4);
  EXPECT_EQ(packed[0], 0b01101100);
}

struct FixpointCase {
  int bits;
  ScaleMode mode;
  Rounding rounding;
  DType dtype;
};

class FixpointRoundTrip : public ::testing::TestWithParam<FixpointCase> {};

TEST_P(FixpointRoundTrip, StaysWithinHalfAStepOfTheScale) {
  const FixpointCase p = GetParam();
  const int64_t rows = 37, cols = 200;
  std::vector<float> x = MakeActivationLike(rows, cols, 7);
  // Feed what the sender holds in its own dtype.
  std::vector<uint16_t> narrow(x.size());
  const void* data = x.data();
  if (p.dtype != DType::kFloat32) {
    ConvertFromFloat(x.data(), p.dtype, narrow.data(), x.size());
    ConvertToFloat(narrow.data(), p.dtype, x.data(), x.size());
    data = narrow.data();
  }
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  config.bits = p.bits;
  config.scale_mode = p.mode;
  config.tile_size = 48;
  config.rounding = p.rounding;
  auto codec = MakeCodec(config);
  ASSERT_TRUE(codec.ok()) << codec.status().ToString();

  std::vector<uint8_t> frame;
  EncodeStats stats;
  ASSERT_TRUE(EncodeFrame(**codec, {data, p.dtype, {rows, cols}}, &frame, &stats).ok());
  DecodedTensor out;
  const Status s = DecodeFrame(**codec, frame, {}, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out.dtype, p.dtype);
  ASSERT_EQ(out.values.size(), x.size());

  // Bound: |x - x̂| <= scale / 2^(b-1), scale = max|x| of the group rounded up to fp16.
  auto group_of = [&](int64_t r, int64_t c) -> int64_t {
    switch (p.mode) {
      case ScaleMode::kPerChannel:
        return c;
      case ScaleMode::kPerRow:
        return r;
      case ScaleMode::kPerTile:
        return r * ((cols + 47) / 48) + c / 48;
    }
    return 0;
  };
  std::vector<float> group_max(rows * cols, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      group_max[group_of(r, c)] = std::max(group_max[group_of(r, c)], std::fabs(x[r * cols + c]));
  double err = 0, norm = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float scale = HalfToFloat(FloatToHalfRoundUp(group_max[group_of(r, c)]));
      const float bound = scale / static_cast<float>(1 << (p.bits - 1));
      const float d = std::fabs(x[r * cols + c] - out.values[r * cols + c]);
      ASSERT_LE(d, bound * (1 + 1e-6f)) << "r=" << r << " c=" << c;
      err += d * d;
      norm += x[r * cols + c] * x[r * cols + c];
    }
  }
  EXPECT_NEAR(stats.rel_error, std::sqrt(err / norm), 1e-4);
  EXPECT_GT(stats.Ratio(), 1.0);
}

std::vector<FixpointCase> AllFixpointCases() {
  std::vector<FixpointCase> cases;
  for (int bits = 2; bits <= 8; ++bits)
    for (ScaleMode m : {ScaleMode::kPerChannel, ScaleMode::kPerRow, ScaleMode::kPerTile})
      for (Rounding r : {Rounding::kNearest, Rounding::kStochastic})
        for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
          cases.push_back({bits, m, r, d});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllSettings, FixpointRoundTrip, ::testing::ValuesIn(AllFixpointCases()));

TEST(Fixpoint, FourBitsIsAboutEightTimesSmallerThanFloat32) {
  std::vector<float> x = MakeActivationLike(64, 1600, 1);
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  config.bits = 4;
  auto codec = MakeCodec(config);
  std::vector<uint8_t> frame;
  EncodeStats stats;
  ASSERT_TRUE(EncodeFrame(**codec, {x.data(), DType::kFloat32, {64, 1600}}, &frame, &stats).ok());
  EXPECT_GT(stats.Ratio(), 7.5);
}

TEST(Fixpoint, StochasticRoundingIsUnbiased) {
  // A constant between two code points averages to itself over many independent draws.
  const int n = 20000;
  std::vector<float> x(n, 0.3f);
  x[0] = 1.0f;  // fixes the scale of the single row at 1
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  config.bits = 2;
  config.scale_mode = ScaleMode::kPerRow;
  config.rounding = Rounding::kStochastic;
  auto codec = MakeCodec(config);
  std::vector<uint8_t> frame;
  ASSERT_TRUE(EncodeFrame(**codec, {x.data(), DType::kFloat32, {1, n}}, &frame).ok());
  DecodedTensor out;
  ASSERT_TRUE(DecodeFrame(**codec, frame, {}, &out).ok());
  double mean = 0;
  for (int i = 1; i < n; ++i) mean += out.values[i];
  mean /= n - 1;
  EXPECT_NEAR(mean, 0.3, 0.01);
}

TEST(Fixpoint, ScalesBeyondFp16FallBackToFloat32) {
  std::vector<float> x = {1e6f, -3e5f, 2.0f, 0.0f};
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  config.bits = 8;
  config.scale_mode = ScaleMode::kPerRow;
  auto codec = MakeCodec(config);
  std::vector<uint8_t> frame;
  ASSERT_TRUE(EncodeFrame(**codec, {x.data(), DType::kFloat32, {1, 4}}, &frame).ok());
  DecodedTensor out;
  ASSERT_TRUE(DecodeFrame(**codec, frame, {}, &out).ok());
  EXPECT_NEAR(out.values[0], 1e6f, 1e6f / 128);
  EXPECT_NEAR(out.values[1], -3e5f, 1e6f / 128);
}

TEST(Fixpoint, RejectsNonFiniteInput) {
  std::vector<float> x = {1.0f, NAN, 2.0f, 3.0f};
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  auto codec = MakeCodec(config);
  std::vector<uint8_t> frame;
  const Status s = EncodeFrame(**codec, {x.data(), DType::kFloat32, {2, 2}}, &frame);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("NaN"), std::string::npos) << s.ToString();
}

TEST(Fixpoint, BitsMayChangeBetweenFramesOnOneLink) {
  std::vector<float> x = MakeActivationLike(8, 64, 3);
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  config.bits = 4;
  auto sender = MakeCodec(config);
  auto receiver = MakeCodec(config);
  for (int bits : {4, 2, 8, 3}) {
    config.bits = bits;
    ASSERT_TRUE((*sender)->Reconfigure(config).ok());
    std::vector<uint8_t> frame;
    EncodeStats stats;
    ASSERT_TRUE(EncodeFrame(**sender, {x.data(), DType::kFloat32, {8, 64}}, &frame, &stats).ok());
    DecodedTensor out;
    ASSERT_TRUE(DecodeFrame(**receiver, frame, {}, &out).ok()) << bits;
    EXPECT_LT(stats.rel_error, bits >= 4 ? 0.2 : 0.7);
  }
}

TEST(CodecConfig, ValidationNamesTheField) {
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  config.bits = 9;
  const Status s = config.Validate();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("bits:", 0), 0u) << s.message();
}

}  // namespace
}  // namespace geotrain::compression

namespace geotrain::compression {
namespace {

TEST(Fixpoint, ThreadedEncodeAndDecodeGiveIdenticalFramesAndValues) {
  // Rows not a multiple of the piece grain, columns giving rows that end mid-byte at 3 bits.
  const int64_t rows = 3203, cols = 333;  // > 4 x 2^18 values: four pieces
  const std::vector<float> x = MakeActivationLike(rows, cols, 5);
  for (int bits : {3, 4, 8}) {
    for (ScaleMode mode : {ScaleMode::kPerChannel, ScaleMode::kPerRow, ScaleMode::kPerTile}) {
      CodecConfig config;
      config.codec = CodecId::kFixpoint;
      config.bits = bits;
      config.scale_mode = mode;
      config.tile_size = 32;
      std::vector<uint8_t> single, threaded;
      EncodeStats single_stats, threaded_stats;
      auto one = MakeCodec(config);
      ASSERT_TRUE(
          EncodeFrame(**one, {x.data(), DType::kFloat32, {rows, cols}}, &single, &single_stats)
              .ok());
      config.threads = 4;
      auto many = MakeCodec(config);
      ASSERT_TRUE(
          EncodeFrame(**many, {x.data(), DType::kFloat32, {rows, cols}}, &threaded, &threaded_stats)
              .ok());
      EXPECT_EQ(single, threaded) << "bits=" << bits << " mode=" << ScaleModeName(mode);
      EXPECT_NEAR(single_stats.rel_error, threaded_stats.rel_error, 1e-6);
      DecodedTensor a, b;
      ASSERT_TRUE(DecodeFrame(**one, single, {}, &a).ok());
      ASSERT_TRUE(DecodeFrame(**many, single, {}, &b).ok());
      EXPECT_EQ(a.values, b.values);
    }
  }
}

}  // namespace
}  // namespace geotrain::compression
