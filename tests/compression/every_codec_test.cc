// Properties every codec shares: the sender's dtype and shape come back, fp16/bf16 inputs work,
// zstd composes with any codec, and the reported error matches the decoded tensor.
#include <gtest/gtest.h>

#include <cmath>

#include "compression/codec.h"
#include "compression/frame.h"
#include "compression/link_decoder.h"
#include "compression/synthetic_tensors.h"

namespace geotrain::compression {
namespace {

struct Case {
  CodecId codec;
  DType dtype;
  int zstd_level;
};

class EveryCodec : public ::testing::TestWithParam<Case> {};

TEST_P(EveryCodec, RoundTripKeepsDtypeShapeAndReportsItsError) {
  const Case p = GetParam();
  const Shape shape = {2, 6, 64};
  std::vector<float> x = MakeActivationLike(12, 64, 3, 1);
  // The sender holds `dtype`; compare against the values it actually holds.
  std::vector<uint16_t> narrow(x.size());
  const void* data = x.data();
  if (p.dtype != DType::kFloat32) {
    ConvertFromFloat(x.data(), p.dtype, narrow.data(), x.size());
    ConvertToFloat(narrow.data(), p.dtype, x.data(), x.size());
    data = narrow.data();
  }
  CodecConfig config;
  config.codec = p.codec;
  config.zstd_level = p.zstd_level;
  config.tile_size = 16;
  config.density = 0.5;
  config.rank = 4;
  config.random_ratio = 1.0;  // cocktail: keep everything sampled ...
  config.topk_ratio = 1.0;    // ... so the decoded tensor is close to the input
  config.error_feedback = false;
  auto sender = MakeCodec(config);
  ASSERT_TRUE(sender.ok()) << sender.status().ToString();
  LinkDecoder receiver(config);
  const std::vector<uint64_t> ids = {1, 2};
  std::vector<uint8_t> frame;
  EncodeStats stats;
  ASSERT_TRUE(EncodeFrame(**sender, {data, p.dtype, shape, ids, 0}, &frame, &stats).ok());
  DecodedTensor out;
  const Status s = receiver.Decode(frame, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out.dtype, p.dtype);
  EXPECT_EQ(out.shape, shape);
  ASSERT_EQ(out.values.size(), x.size());
  double err = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_TRUE(std::isfinite(out.values[i]));
    err += (x[i] - out.values[i]) * double(x[i] - out.values[i]);
    norm += x[i] * double(x[i]);
  }
  EXPECT_NEAR(stats.rel_error, std::sqrt(err / norm), 1e-3) << CodecName(p.codec);
  EXPECT_EQ(stats.raw_bytes, x.size() * DTypeSize(p.dtype));
  EXPECT_EQ(stats.wire_bytes, frame.size());
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (int id = 0; id < kNumCodecs; ++id)
    for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
      for (int zstd : {0, 3}) cases.push_back({static_cast<CodecId>(id), d, zstd});
  return cases;
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = std::string(CodecName(info.param.codec)) + "_" + DTypeName(info.param.dtype) +
                     (info.param.zstd_level ? "_zstd" : "");
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, EveryCodec, ::testing::ValuesIn(AllCases()), CaseName);

}  // namespace
}  // namespace geotrain::compression
