// tah decoding of hostile frames: every inconsistency is a clean DATA_LOSS naming the field.
// Frames are altered after ParseFrame (past the checksum), as a corrupting or malicious sender
// that reseals frames would alter them.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/hash_random.h"
#include "compression/synthetic_tensors.h"
#include "tests/compression/tah_test_util.h"

namespace geotrain::compression {
namespace {

using tah_test::EncodeOrDie;
using tah_test::ParseTahFrame;
using tah_test::TahConfig;
using tah_test::TahFrame;

// A decodable frame whose params and payload the test may edit.
class TahHostile : public ::testing::Test {
 protected:
  void Load(const CodecConfig& config, const std::vector<float>& x, Shape shape) {
    const auto e = EncodeOrDie(config, x, shape);
    ParseTahFrame(e.frame, &frame_);
    params_.assign(frame_.content.params.begin(), frame_.content.params.end());
    payload_.assign(frame_.content.payload.begin(), frame_.content.payload.end());
    shape_ = shape;
    ASSERT_TRUE(Decode().ok());
  }
  void SetUp() override {
    std::vector<float> x = MakeActivationLike(10, 96, 17, 3);
    x[5] = 80.0f;  // a rotated tile (tile size 16: log2 = 4-bit pivots)
    x[96 + 40] = -70.0f;
    Load(TahConfig(16, 4, 3, 0.5), x, {10, 96});
    ASSERT_GT(frame_.params.outlier_tiles, 0u);
  }

  Status Decode() {
    FrameContent content = frame_.content;
    content.shape = shape_;
    int64_t elements = 1;
    for (int64_t d : shape_) elements *= d;
    content.elements = elements;
    content.params = Span<const uint8_t>(params_.data(), params_.size());
    content.payload = Span<const uint8_t>(payload_.data(), payload_.size());
    auto codec = MakeCodec(TahConfig());
    out_.assign(elements, 0.0f);
    return (*codec)->Decode(content, out_.data());
  }
  void ExpectDataLoss(const std::string& field) {
    const Status s = Decode();
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
    EXPECT_EQ(s.message().rfind(field, 0), 0u) << s.ToString();
  }
  void FlipPayloadBit(size_t byte, int bit) { payload_[byte] ^= static_cast<uint8_t>(1 << bit); }
  // Params offsets: u32 tile, u8 high, u8 low, u8 unit, u8 scale type, u64 high units, u64
  // outliers.
  template <typename T>
  void SetParam(size_t at, T value) {
    std::memcpy(params_.data() + at, &value, sizeof(T));
  }

  TahFrame frame_;
  std::vector<uint8_t> params_, payload_;
  Shape shape_;
  std::vector<float> out_;
};

TEST_F(TahHostile, FlippedUnitBitmapBitDisagreesWithTheCount) {
  FlipPayloadBit(frame_.unit_map_at, 7);
  ExpectDataLoss("tah.unit_bitmap: ");
}

TEST_F(TahHostile, FlippedOutlierBitmapBitDisagreesWithTheCount) {
  FlipPayloadBit(frame_.tile_map_at + 1, 2);
  ExpectDataLoss("tah.outlier_bitmap: ");
}

TEST_F(TahHostile, ConsistentlyFlippedUnitBitMakesTheCodeSizesDisagree) {
  // Make one more unit high in both the bitmap and the count: the codes no longer fill the payload.
  int64_t low_unit = 0;
  while (frame_.unit_high[low_unit]) ++low_unit;
  FlipPayloadBit(frame_.unit_map_at + low_unit / 8, 7 - low_unit % 8);
  SetParam<uint64_t>(8, frame_.params.high_units + 1);
  ExpectDataLoss("tah.codes: truncated");
  // And one fewer: trailing bytes.
  FlipPayloadBit(frame_.unit_map_at + low_unit / 8, 7 - low_unit % 8);
  int64_t high_unit = 0;
  while (!frame_.unit_high[high_unit]) ++high_unit;
  FlipPayloadBit(frame_.unit_map_at + high_unit / 8, 7 - high_unit % 8);
  SetParam<uint64_t>(8, frame_.params.high_units - 1);
  ExpectDataLoss("tah.payload: ");
}

TEST_F(TahHostile, ConsistentlyFlippedOutlierBitsShiftTheSections) {
  // Two more rotated tiles in both the bitmap and the count: one more byte of pivots, so the
  // sections after it shift and the lengths no longer add up.
  for (int extra = 0, k = 0; extra < 2; ++k) {
    if (frame_.rotated[k]) continue;
    FlipPayloadBit(frame_.tile_map_at + k / 8, 7 - k % 8);
    ++extra;
  }
  SetParam<uint64_t>(16, frame_.params.outlier_tiles + 2);
  const Status s = Decode();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
}

TEST_F(TahHostile, EveryTruncationFailsCleanly) {
  const std::vector<uint8_t> full = payload_;
  for (size_t n = 0; n < full.size(); ++n) {
    payload_.assign(full.begin(), full.begin() + n);
    const Status s = Decode();
    ASSERT_EQ(s.code(), StatusCode::kDataLoss) << n << " " << s.ToString();
    ASSERT_NE(s.message().find("truncated"), std::string::npos) << n << " " << s.ToString();
  }
  payload_ = full;
  payload_.push_back(0);
  ExpectDataLoss("tah.payload: 1 unexpected trailing bytes");
}

TEST_F(TahHostile, ParamsAreCheckedFieldByField) {
  const std::vector<uint8_t> good = params_;
  params_.pop_back();
  ExpectDataLoss("tah.params.outlier_tiles: truncated");
  params_ = good;
  params_.push_back(0);
  ExpectDataLoss("tah.params: 1 unexpected trailing bytes");
  params_ = good;
  SetParam<uint32_t>(0, 24);
  ExpectDataLoss("tah.params.tile_size: 24 is not a power of two");
  SetParam<uint32_t>(0, 2048);
  ExpectDataLoss("tah.params.tile_size: 2048 is not a power of two in 8..1024");
  SetParam<uint32_t>(0, 64);  // a power of two that does not divide 96
  ExpectDataLoss("tah.params.tile_size: 64 does not divide the last dim 96");
  params_ = good;
  SetParam<uint8_t>(4, 9);
  ExpectDataLoss("tah.params.high_bits: 9 is outside 2..8");
  params_ = good;
  SetParam<uint8_t>(5, 1);
  ExpectDataLoss("tah.params.low_bits: 1 is outside 2..8");
  params_ = good;
  SetParam<uint8_t>(6, 2);
  ExpectDataLoss("tah.params.entropy_unit: unknown value 2");
  params_ = good;
  SetParam<uint8_t>(7, 7);
  ExpectDataLoss("tah.params.scale_type: 7 is not 0 or 1");
  params_ = good;
  SetParam<uint64_t>(8, 11);
  ExpectDataLoss("tah.params.high_units: 11 exceeds the 10 units");
  params_ = good;
  SetParam<uint64_t>(16, ~uint64_t{0});
  ExpectDataLoss("tah.params.outlier_tiles: ");
  params_ = good;
  SetParam<uint64_t>(16, 60);  // every tile: plausible count, bitmap disagrees
  ExpectDataLoss("tah.outlier_bitmap: ");
}

TEST_F(TahHostile, ShapeMustFitTheTiles) {
  shape_ = {};
  ExpectDataLoss("tah.params.shape: ");
  shape_ = {96, 10};
  ExpectDataLoss("tah.params.tile_size: 16 does not divide the last dim 10");
  shape_ = {20, 48};  // same element count, other geometry: sections disagree
  EXPECT_EQ(Decode().code(), StatusCode::kDataLoss);
}

TEST_F(TahHostile, BitmapPaddingMustBeZero) {
  // 10 units: the unit bitmap's second byte uses 2 bits; 60 tiles: the outlier bitmap's last
  // byte uses 4.
  FlipPayloadBit(frame_.unit_map_at + 1, 0);
  ExpectDataLoss("tah.unit_bitmap: padding bits after bit 10 are not zero");
  FlipPayloadBit(frame_.unit_map_at + 1, 0);
  FlipPayloadBit(frame_.tile_map_at + 7, 1);
  ExpectDataLoss("tah.outlier_bitmap: padding bits after bit 60 are not zero");
}

TEST_F(TahHostile, BadPivotFieldsFailAndInRangePivotsStayInTheTile) {
  // Pivots are log2(16) = 4-bit fields: any value names an element of the tile, so a pivot can
  // only be "bad" through the section's length or padding.
  const uint64_t outliers = frame_.params.outlier_tiles;
  if (outliers % 2 == 1) {  // an odd number of 4-bit pivots leaves 4 padding bits
    FlipPayloadBit(frame_.scales_at - 1, 0);
    ExpectDataLoss("tah.pivots: padding bits after the last index are not zero");
    FlipPayloadBit(frame_.scales_at - 1, 0);
  }
  // Each pivot value 0..15 decodes; only that tile changes.
  std::vector<float> reference;
  ASSERT_TRUE(Decode().ok());
  reference = out_;
  int64_t first_rotated = 0;
  while (!frame_.rotated[first_rotated]) ++first_rotated;
  for (int pivot = 0; pivot < 16; ++pivot) {
    payload_[frame_.pivots_at] =
        static_cast<uint8_t>((payload_[frame_.pivots_at] & 0x0f) | (pivot << 4));
    ASSERT_TRUE(Decode().ok());
    for (size_t i = 0; i < out_.size(); ++i) {
      if (static_cast<int64_t>(i / 16) != first_rotated) {
        ASSERT_EQ(out_[i], reference[i]) << i;
      }
      ASSERT_TRUE(std::isfinite(out_[i]));
    }
  }
}

TEST_F(TahHostile, ScalesMustBeFiniteAndNonNegative) {
  const std::vector<uint8_t> good = payload_;
  const uint16_t nan = 0x7e00, inf = 0x7c00, negative = 0xbc00;  // -1.0
  std::memcpy(&payload_[frame_.scales_at + 4 * 3], &nan, 2);
  ExpectDataLoss("tah.scales[3].zero: ");
  payload_ = good;
  std::memcpy(&payload_[frame_.scales_at + 4 * 5 + 2], &inf, 2);
  ExpectDataLoss("tah.scales[5].scale: ");
  payload_ = good;
  std::memcpy(&payload_[frame_.scales_at + 4 * 59 + 2], &negative, 2);
  ExpectDataLoss("tah.scales[59].scale: -1.000000 is not a finite value >= 0");
}

TEST_F(TahHostile, Float32ScalesThatWouldOverflowAreRefused) {
  std::vector<float> x = MakeActivationLike(4, 64, 3, 1);
  for (float& v : x) v *= 1e5f;
  x[2] = 9e6f;
  Load(TahConfig(16), x, {4, 64});
  ASSERT_TRUE(frame_.params.f32_scales);
  const std::vector<uint8_t> good = payload_;
  const float huge = 3e37f, nan = NAN;
  std::memcpy(&payload_[frame_.scales_at + 8 * 2 + 4], &huge, 4);  // tile 2's scale
  ExpectDataLoss("tah.scales[2]: ");
  payload_ = good;
  std::memcpy(&payload_[frame_.scales_at + 8 * 1], &nan, 4);
  ExpectDataLoss("tah.scales[1]: ");
}

TEST_F(TahHostile, RandomCorruptionNeverCrashesAndOkMeansFinite) {
  const std::vector<uint8_t> good_params = params_, good_payload = payload_;
  SplitMix64 rng(99);
  for (int trial = 0; trial < 3000; ++trial) {
    params_ = good_params;
    payload_ = good_payload;
    const int flips = 1 + static_cast<int>(rng.Next() % 4);
    for (int i = 0; i < flips; ++i) {
      const uint64_t r = rng.Next();
      if (r % 5 == 0) {
        params_[(r >> 8) % params_.size()] ^= static_cast<uint8_t>(1 << ((r >> 40) % 8));
      } else {
        payload_[(r >> 8) % payload_.size()] ^= static_cast<uint8_t>(1 << ((r >> 40) % 8));
      }
    }
    const Status s = Decode();
    if (s.ok()) {
      for (float v : out_) ASSERT_TRUE(std::isfinite(v)) << "trial " << trial;
    } else {
      ASSERT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
    }
  }
}

}  // namespace
}  // namespace geotrain::compression
