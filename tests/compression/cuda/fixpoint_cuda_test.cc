// The CUDA fixpoint codec writes the CPU codec's bytes and decodes to the CPU codec's values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>

#include "common/half.h"
#include "compression/synthetic_tensors.h"
#include "tests/compression/cuda/cuda_test_util.h"

namespace geotrain::compression::cuda {
namespace {

struct Case {
  int bits;
  ScaleMode mode;
  Rounding rounding;
  int64_t rows, cols;
  int tile;
};

class FixpointCudaTest : public ::testing::TestWithParam<Case> {};

TEST_P(FixpointCudaTest, FramesAndDecodedValuesMatchTheCpuCodec) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  const Case c = GetParam();
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  config.bits = c.bits;
  config.scale_mode = c.mode;
  config.rounding = c.rounding;
  config.tile_size = c.tile;
  config.seed = 77;
  auto cpu = MakeCodec(config);
  auto gpu = MakeCudaCodec(config);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  const std::vector<float> x = MakeActivationLike(c.rows, c.cols, 1234 + c.bits);
  const Shape shape{c.rows, c.cols};
  const std::vector<uint8_t> expected = CpuFrame(**cpu, x, shape, {}, 5);
  const std::vector<uint8_t> got = GpuFrame(**gpu, x, shape, {}, 5);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "frames differ";

  DecodedTensor cpu_decoded;
  ASSERT_TRUE(DecodeFrame(**cpu, expected, FrameLimits(), &cpu_decoded).ok());
  const std::vector<float> gpu_decoded = GpuDecode(**gpu, expected);
  ASSERT_EQ(gpu_decoded.size(), cpu_decoded.values.size());
  for (size_t i = 0; i < gpu_decoded.size(); ++i) {
    ASSERT_EQ(std::memcmp(&gpu_decoded[i], &cpu_decoded.values[i], 4), 0) << "value " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    BitsModesAndShapes, FixpointCudaTest,
    ::testing::Values(Case{8, ScaleMode::kPerChannel, Rounding::kNearest, 256, 1024, 64},
                      Case{4, ScaleMode::kPerChannel, Rounding::kNearest, 37, 1000, 64},
                      Case{3, ScaleMode::kPerChannel, Rounding::kNearest, 129, 77, 64},
                      Case{2, ScaleMode::kPerRow, Rounding::kNearest, 64, 768, 64},
                      Case{5, ScaleMode::kPerRow, Rounding::kStochastic, 33, 129, 64},
                      Case{4, ScaleMode::kPerTile, Rounding::kNearest, 16, 1000, 128},
                      Case{7, ScaleMode::kPerTile, Rounding::kStochastic, 9, 333, 64},
                      Case{6, ScaleMode::kPerChannel, Rounding::kStochastic, 1, 1, 64}));

TEST(FixpointCuda, Float32ScalesBeyondTheHalfRangeMatchTheCpuCodec) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  config.bits = 4;
  auto cpu = MakeCodec(config);
  auto gpu = MakeCudaCodec(config);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  std::vector<float> x = MakeGaussian(64 * 96, 9);
  x[100] = 1e6f;  // beyond 65504: every scale travels as float32
  EXPECT_TRUE(GpuFrame(**gpu, x, {64, 96}) == CpuFrame(**cpu, x, {64, 96}));
}

TEST(FixpointCuda, RefusesNonFiniteInputLikeTheCpuCodec) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  auto gpu = MakeCudaCodec(config);
  ASSERT_TRUE(gpu.ok());
  std::vector<float> x(256, 1.0f);
  x[17] = std::numeric_limits<float>::quiet_NaN();
  DeviceArray<float> device = ToDevice(x);
  std::vector<uint8_t> frame;
  const Status s =
      EncodeDeviceFrame(**gpu, TensorView{device.data(), DType::kFloat32, {16, 16}}, &frame);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("NaN or infinity"), std::string::npos) << s.ToString();
}

TEST(FixpointCuda, BFloat16DeviceInputGivesTheCpuFrameOfTheSameBFloat16Values) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  config.bits = 4;
  auto cpu = MakeCodec(config);
  auto gpu = MakeCudaCodec(config);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  ExpectBFloat16DeviceFrameIsTheCpuFrame(**cpu, **gpu, MakeActivationLike(32, 256, 3), {32, 256});
}

TEST(FixpointCuda, RefusesACorruptScaleBeforeWritingAValue) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  CodecConfig config;
  config.codec = CodecId::kFixpoint;
  auto cpu = MakeCodec(config);
  auto gpu = MakeCudaCodec(config);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  std::vector<uint8_t> frame = CpuFrame(**cpu, MakeGaussian(8 * 8, 4), {8, 8});
  const size_t scales_at = kFrameHeaderBytes + 16 + 1;
  frame[scales_at] = 0x00;
  frame[scales_at + 1] = 0x7c;  // fp16 infinity
  UpdateFrameChecksum(frame.data(), frame.size());
  DeviceDecodedTensor decoded;
  const Status s = DecodeDeviceFrame(**gpu, frame, FrameLimits(), &decoded);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("fixpoint.scales[0]"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace geotrain::compression::cuda
