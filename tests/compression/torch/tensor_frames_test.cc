#include "compression/torch/tensor_frames.h"

#include <gtest/gtest.h>

namespace geotrain::compression {
namespace {

TEST(TensorFrames, RoundTripKeepsDtypeAndShape) {
  for (at::ScalarType type : {at::kFloat, at::kHalf, at::kBFloat16}) {
    at::manual_seed(1);
    const at::Tensor x = at::randn({3, 5, 64}).to(type);
    CodecConfig config;
    config.codec = CodecId::kFixpoint;
    config.bits = 8;
    auto codec = MakeCodec(config);
    ASSERT_TRUE(codec.ok());
    std::vector<uint8_t> frame;
    ASSERT_TRUE(EncodeTensor(**codec, x, {}, 0, &frame).ok());
    LinkDecoder decoder(config);
    auto y = DecodeTensor(decoder, frame);
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    EXPECT_EQ(y->scalar_type(), type);
    EXPECT_EQ(y->sizes(), x.sizes());
    const double rel = ((*y).to(at::kFloat) - x.to(at::kFloat)).norm().item<double>() /
                       x.to(at::kFloat).norm().item<double>();
    EXPECT_LT(rel, 0.02);
  }
}

TEST(TensorFrames, NonContiguousInputIsEncodedAsItsValues) {
  const at::Tensor x = at::arange(24, at::kFloat).reshape({4, 6}).t();
  CodecConfig config;  // none: exact
  auto codec = MakeCodec(config);
  std::vector<uint8_t> frame;
  ASSERT_TRUE(EncodeTensor(**codec, x, {}, 0, &frame).ok());
  LinkDecoder decoder(config);
  auto y = DecodeTensor(decoder, frame);
  ASSERT_TRUE(y.ok());
  EXPECT_TRUE(at::equal(*y, x.contiguous()));
}

TEST(TensorFrames, RefusesIntegerTensorsNamingTheDtype) {
  auto codec = MakeCodec(CodecConfig{});
  std::vector<uint8_t> frame;
  const Status s = EncodeTensor(**codec, at::ones({2}, at::kLong), {}, 0, &frame);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor.dtype"), std::string::npos);
}

}  // namespace
}  // namespace geotrain::compression
